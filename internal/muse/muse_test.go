package muse

import (
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
)

func TestParseChat(t *testing.T) {
	tests := []struct {
		name, body string
		code       string // "" for OK
		check      func(ChatRequest) bool
	}{
		{"OK", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":9,"stop":"x"}`, "",
			func(r ChatRequest) bool {
				return r.Stream && r.IncludeUsage && r.MaxTokens == 9 && len(r.Stop) == 1 && r.Messages[0].Content == "hi"
			}},
		{"OKContentParts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}]}`, "",
			func(r ChatRequest) bool { return r.Messages[0].Content == "ab" }},
		{"OKMaxCompletionTokensWins", `{"model":"m","messages":[{"role":"assistant","content":null}],"max_tokens":5,"max_completion_tokens":7}`, "",
			func(r ChatRequest) bool { return r.MaxTokens == 7 }},
		{"ErrNotJSON", `{"model":`, CodeInvalidRequest, nil},
		{"ErrNoModel", `{"messages":[{"role":"user","content":"hi"}]}`, CodeInvalidRequest, nil},
		{"ErrNoMessages", `{"model":"m","messages":[]}`, CodeInvalidRequest, nil},
		{"ErrBadRole", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, CodeInvalidRequest, nil},
		{"ErrBadContent", `{"model":"m","messages":[{"role":"user","content":7}]}`, CodeInvalidRequest, nil},
		{"ErrModelType", `{"model":7,"messages":[{"role":"user","content":"hi"}]}`, CodeInvalidRequest, nil},
		{"ErrNegativeMax", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":-1}`, CodeInvalidRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseChat([]byte(tt.body))
			if got := errs.Code(err); got != tt.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.code)
			}
			if tt.check != nil && !tt.check(r) {
				t.Fatalf("parsed %+v", r)
			}
		})
	}
}

func TestTargetsRestAfterFiveFailures(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	h := newHealth(func() time.Time { return now })
	for i := range SkipAfter {
		if h.skipped("a") {
			t.Fatalf("skipped after %d failures", i)
		}
		h.failed("a")
	}
	if !h.skipped("a") {
		t.Fatal("not skipped after 5 failures")
	}
	now = now.Add(SkipFor)
	if h.skipped("a") {
		t.Fatal("still skipped after 30 s")
	}
	h.failed("a") // the retry fails: another rest
	if !h.skipped("a") {
		t.Fatal("a failed retry did not rest again")
	}
	h.succeeded("a")
	if h.skipped("a") {
		t.Fatal("skipped after a success")
	}
}

func TestOrderedDrawsOnlyTheFirst(t *testing.T) {
	plain := []Target{{CredentialID: "a"}, {CredentialID: "b"}, {CredentialID: "c"}}
	if got := ordered(plain); got[0].CredentialID != "a" || got[2].CredentialID != "c" {
		t.Fatalf("unweighted order %v", got)
	}
	weighted := []Target{{CredentialID: "a"}, {CredentialID: "b", Weight: 1}, {CredentialID: "c"}}
	for range 50 {
		got := ordered(weighted)
		if got[0].CredentialID != "b" || got[1].CredentialID != "a" || got[2].CredentialID != "c" {
			t.Fatalf("weighted order %v", got)
		}
	}
	seen := map[string]bool{}
	for range 200 {
		seen[ordered([]Target{{CredentialID: "a", Weight: 1}, {CredentialID: "b", Weight: 1}})[0].CredentialID] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("equal weights drew only %v", seen)
	}
}

func TestCountTokensOffline(t *testing.T) {
	if n := CountTokens("Hello, world"); n != 3 {
		t.Fatalf("CountTokens = %d, want 3 (cl100k_base)", n)
	}
	if n := PromptTokens([]Message{{Role: "user", Content: "Hello, world"}}); n != 10 {
		t.Fatalf("PromptTokens = %d, want 10", n)
	}
}
