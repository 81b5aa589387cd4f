package courier

import (
	"strings"
	"testing"

	"github.com/platformco/platform/internal/errs"
)

func sampleData(template string) map[string]any {
	d := map[string]any{}
	for _, k := range templateSpecs[template].keys {
		switch k {
		case "link":
			d[k] = "https://app.example.com/x?token=abc"
		case "new_email", "inviter_email":
			d[k] = "someone@example.com"
		default:
			d[k] = "Engines"
		}
	}
	return d
}

func TestEveryTemplateRendersThreeParts(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Templates() {
		t.Run(name, func(t *testing.T) {
			data, err := SendRequest{Template: name, To: "a@example.com", Data: sampleData(name)}.validate()
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			got, err := r.Render(name, data)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got.Subject == "" || strings.TrimSpace(got.Text) == "" || !strings.Contains(got.HTML, "<html>") {
				t.Errorf("Render = %+v, want a subject, a text part and an HTML part", got)
			}
			for k, v := range data {
				if !strings.Contains(got.Text, v) {
					t.Errorf("text part lacks data.%s", k)
				}
			}
		})
	}
}

func TestHTMLPartIsEscaped(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Render(TemplateInvitation, map[string]string{
		"link": `https://x.example.com/"><script>alert(1)</script>`, "account_name": "<b>Evil</b> & Co", "inviter_email": "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.HTML, "<script>") || strings.Contains(got.HTML, "<b>Evil") {
		t.Errorf("HTML part carries markup from the data:\n%s", got.HTML)
	}
	if !strings.Contains(got.HTML, "&lt;b&gt;Evil&lt;/b&gt; &amp; Co") {
		t.Errorf("HTML part lacks the escaped account name:\n%s", got.HTML)
	}
}

func TestSendRequestValidation(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name  string
		req   SendRequest
		field string // "" for valid
		rule  string
	}{
		{"OK", SendRequest{Template: TemplateVerifyEmail, To: "a@example.com", Data: map[string]any{"link": "https://x.example.com/v"}}, "", ""},
		{"OKNoDataNeeded", SendRequest{Template: TemplateWelcome, To: "a@example.com"}, "", ""},
		{"OKLocale", SendRequest{Template: TemplateWelcome, To: "a@example.com", Locale: str("de-CH")}, "", ""},
		{"ErrTemplateMissing", SendRequest{To: "a@example.com"}, "template", RuleRequired},
		{"ErrTemplateUnknown", SendRequest{Template: "newsletter", To: "a@example.com"}, "template", RuleUnknown},
		{"ErrToMissing", SendRequest{Template: TemplateWelcome}, "to", RuleRequired},
		{"ErrToMalformed", SendRequest{Template: TemplateWelcome, To: "not-an-address"}, "to", RuleInvalid},
		{"ErrToDisplayName", SendRequest{Template: TemplateWelcome, To: "Ann <a@example.com>"}, "to", RuleInvalid},
		{"ErrToHeaderInjection", SendRequest{Template: TemplateWelcome, To: "a@example.com\r\nBcc: b@example.com"}, "to", RuleInvalid},
		{"ErrToNoDomainDot", SendRequest{Template: TemplateWelcome, To: "a@localhost"}, "to", RuleInvalid},
		{"OKToNonASCII", SendRequest{Template: TemplateWelcome, To: "jos\u00e9@example.com"}, "", ""},
		{"OKToCyrillic", SendRequest{Template: TemplateWelcome, To: "\u0438\u0432\u0430\u043d@\u043f\u0440\u0438\u043c\u0435\u0440.com"}, "", ""},
		{"ErrToMixedScripts", SendRequest{Template: TemplateWelcome, To: "\u0430lice@example.com"}, "to", RuleInvalid},
		{"ErrToDomainMixedScripts", SendRequest{Template: TemplateWelcome, To: "alice@ex\u0430mple.com"}, "to", RuleInvalid},
		{"ErrToFullwidth", SendRequest{Template: TemplateWelcome, To: "\uff41\uff4c\uff49\uff43\uff45@example.com"}, "to", RuleInvalid},
		{"ErrToFullwidthDomain", SendRequest{Template: TemplateWelcome, To: "alice@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com"}, "to", RuleInvalid},
		{"ErrToHangulFiller", SendRequest{Template: TemplateWelcome, To: "al\u3164ice@example.com"}, "to", RuleInvalid},
		{"ErrToVariationSelector", SendRequest{Template: TemplateWelcome, To: "alice\ufe0f@example.com"}, "to", RuleInvalid},
		{"ErrToBidiOverride", SendRequest{Template: TemplateWelcome, To: "alice\u202e@example.com"}, "to", RuleInvalid},
		{"ErrLocale", SendRequest{Template: TemplateWelcome, To: "a@example.com", Locale: str("not a locale")}, "locale", RuleInvalid},
		{"ErrDataMissing", SendRequest{Template: TemplatePasswordReset, To: "a@example.com"}, "data.link", RuleRequired},
		{"ErrDataNotString", SendRequest{Template: TemplatePasswordReset, To: "a@example.com", Data: map[string]any{"link": 5.0}}, "data.link", RuleInvalid},
		{"ErrDataLinkNotURL", SendRequest{Template: TemplatePasswordReset, To: "a@example.com", Data: map[string]any{"link": "javascript:alert(1)"}}, "data.link", RuleInvalid},
		{"ErrDataUnknownKey", SendRequest{Template: TemplateWelcome, To: "a@example.com", Data: map[string]any{"name": "x"}}, "data.name", RuleUnknown},
		{"ErrDataControlChars", SendRequest{Template: TemplateInvitation, To: "a@example.com", Data: map[string]any{"link": "https://x.example.com", "account_name": "A\nSubject: x", "inviter_email": "b@example.com"}}, "data.account_name", RuleInvalid},
		{"ErrDataInviterFullwidth", SendRequest{Template: TemplateInvitation, To: "a@example.com", Data: map[string]any{"link": "https://x.example.com", "account_name": "A", "inviter_email": "\uff42@example.com"}}, "data.inviter_email", RuleInvalid},
		{"ErrDataNewEmailMixedScripts", SendRequest{Template: TemplateEmailChangedNotice, To: "a@example.com", Data: map[string]any{"new_email": "b\u03bfb@example.com"}}, "data.new_email", RuleInvalid},
		{"ErrDataHangulFiller", SendRequest{Template: TemplateInvitation, To: "a@example.com", Data: map[string]any{"link": "https://x.example.com", "account_name": "\u3164", "inviter_email": "b@example.com"}}, "data.account_name", RuleInvalid},
		{"ErrDataInviterMalformed", SendRequest{Template: TemplateInvitation, To: "a@example.com", Data: map[string]any{"link": "https://x.example.com", "account_name": "A", "inviter_email": "b"}}, "data.inviter_email", RuleInvalid},
		{"ErrDataTooLong", SendRequest{Template: TemplateEmailChangedNotice, To: "a@example.com", Data: map[string]any{"new_email": strings.Repeat("a", 3000)}}, "data.new_email", RuleTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.req.validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Code != CodeValidation {
				t.Fatalf("validate = %v, want %s", err, CodeValidation)
			}
			for _, f := range e.Fields {
				if f.Field == tt.field && f.Code == tt.rule {
					return
				}
			}
			t.Errorf("fields = %v, want %s %s", e.Fields, tt.field, tt.rule)
		})
	}
}
