package pantry_test

import (
	"strings"
	"testing"

	"github.com/platformco/platform/internal/pantry"
)

func TestCheckSlug(t *testing.T) {
	for _, tc := range []struct{ slug, want string }{
		{"kettle", ""},
		{"kettle-2", ""},
		{"чайник", ""},
		{"abc", ""},
		{strings.Repeat("a", 40), ""},
		{"ab", pantry.RuleTooShort},
		{strings.Repeat("a", 41), pantry.RuleTooLong},
		{"-kettle", pantry.RuleInvalid},
		{"kettle-", pantry.RuleInvalid},
		{"ket--tle", pantry.RuleInvalid},
		{"Kettle", pantry.RuleInvalid},
		{"ket tle", pantry.RuleInvalid},
		{"ket_tle", pantry.RuleInvalid},
		{"аcme", pantry.RuleMixedScripts}, // Cyrillic а, Latin cme
		{"new", pantry.RuleReserved},
		{"api", pantry.RuleReserved},
		{"admin", pantry.RuleReserved},
		{"e\u0301cole", pantry.RuleInvalid}, // not NFC
	} {
		if got := pantry.CheckSlug(tc.slug); got != tc.want {
			t.Errorf("CheckSlug(%q) = %q, want %q", tc.slug, got, tc.want)
		}
	}
}

func TestSlugFrom(t *testing.T) {
	for name, want := range map[string]string{
		"Kettle":                    "kettle",
		"My  Great -- Tool!":        "my-great-tool",
		"Ünïcode Café":              "ünïcode-café",
		"  x  ":                     "x",
		strings.Repeat("long ", 20): "long-long-long-long-long-long-long-long-l", // 40 characters
	} {
		if got := pantry.SlugFrom(name); got != want {
			t.Errorf("SlugFrom(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestRenderMarkdownIsSafe: whatever the Markdown holds, the HTML holds
// no script, event handler, javascript: or data: URL, nor raw HTML.
func TestRenderMarkdownIsSafe(t *testing.T) {
	for name, md := range map[string]string{
		"script":          "<script>alert(1)</script>",
		"inline script":   "hello <script>alert(1)</script> there",
		"javascript link": "[x](javascript:alert(1))",
		"encoded js link": "[x](jav&#x09;ascript:alert(1))",
		"autolink js":     "<javascript:alert(1)>",
		"raw html":        "<div onclick=\"alert(1)\">hi</div>\n\n<img src=x onerror=alert(1)>",
		"iframe":          "<iframe src=\"https://evil.example\"></iframe>",
		"data image":      "![x](data:image/svg+xml;base64,PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+)",
		"data link":       "[x](data:text/html,<script>alert(1)</script>)",
		"style":           "<style>body{display:none}</style>",
		"nested lists":    strings.Repeat("- ", 5000) + "deep",
		"nested quotes":   strings.Repeat(">", 5000) + " deep",
	} {
		t.Run(name, func(t *testing.T) {
			html, err := pantry.RenderMarkdown(md)
			if err != nil {
				t.Fatal(err)
			}
			low := strings.ToLower(html)
			for _, bad := range []string{"<script", `="javascript:`, "onerror=", "onclick=", "<iframe", `="data:`, "<style", "<div"} {
				if strings.Contains(low, bad) {
					t.Errorf("holds %q: %.300s", bad, html)
				}
			}
		})
	}
	html, err := pantry.RenderMarkdown("# Title\n\n**bold** and [link](https://example.com)\n\n| a | b |\n|---|---|\n| 1 | 2 |")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1", "<strong>bold</strong>", `href="https://example.com"`, "<table>"} {
		if !strings.Contains(html, want) {
			t.Errorf("ordinary Markdown lost %q: %s", want, html)
		}
	}
}
