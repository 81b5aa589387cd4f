package courier

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
)

// Template names, the request's `template`.
const (
	TemplateVerifyEmail        = "verify_email"
	TemplatePasswordReset      = "password_reset"
	TemplateEmailChangeConfirm = "email_change_confirm"
	TemplateEmailChangedNotice = "email_changed_notice"
	TemplateInvitation         = "invitation"
	TemplateMFAEnabledNotice   = "mfa_enabled_notice"
	TemplateWelcome            = "welcome"
	// TemplatePasswordChangedNotice tells an address its account's
	// password was changed or reset.
	TemplatePasswordChangedNotice = "password_changed_notice"
	TemplatePaymentReceipt        = "payment_receipt"
	TemplatePaymentFailed         = "payment_failed"
)

// templateSpec is what a template needs: its data keys, which of them
// are links, and whether it is a security message (which ignores
// preferences and complaint suppression, never a hard bounce).
type templateSpec struct {
	keys     []string
	links    []string
	emails   []string
	security bool
	// category is the preference that can turn it off ("" for none).
	category string
}

var templateSpecs = map[string]templateSpec{
	TemplateVerifyEmail:           {keys: []string{"link"}, links: []string{"link"}, security: true},
	TemplatePasswordReset:         {keys: []string{"link"}, links: []string{"link"}, security: true},
	TemplateEmailChangeConfirm:    {keys: []string{"link"}, links: []string{"link"}, security: true},
	TemplateEmailChangedNotice:    {keys: []string{"new_email"}, emails: []string{"new_email"}, security: true},
	TemplateMFAEnabledNotice:      {security: true},
	TemplatePasswordChangedNotice: {security: true},
	TemplateInvitation:            {keys: []string{"link", "account_name", "inviter_email"}, links: []string{"link"}, emails: []string{"inviter_email"}, category: CategoryAccountActivity},
	TemplateWelcome:               {category: CategoryAccountActivity},
	// Billing's (transactional: no preference turns a receipt off).
	TemplatePaymentReceipt: {keys: []string{"amount", "item", "reference", "link"}, links: []string{"link"}},
	TemplatePaymentFailed:  {keys: []string{"amount", "reason", "link"}, links: []string{"link"}},
}

// Templates lists the template names.
func Templates() []string {
	return []string{TemplateVerifyEmail, TemplatePasswordReset, TemplateEmailChangeConfirm,
		TemplateEmailChangedNotice, TemplateInvitation, TemplateMFAEnabledNotice, TemplatePasswordChangedNotice, TemplateWelcome,
		TemplatePaymentReceipt, TemplatePaymentFailed}
}

// IsSecurity reports whether template is a security message.
func IsSecurity(template string) bool { return templateSpecs[template].security }

//go:embed templates
var templateFiles embed.FS

// Renderer renders messages from the templates shipped in the binary.
type Renderer struct {
	text map[string]*texttemplate.Template
	html map[string]*htmltemplate.Template
}

// NewRenderer parses the embedded templates, one set per template name
// (each file defines the same block names). It fails only if a shipped
// template is broken, which the tests catch.
func NewRenderer() (*Renderer, error) {
	r := &Renderer{text: map[string]*texttemplate.Template{}, html: map[string]*htmltemplate.Template{}}
	for _, name := range Templates() {
		t, err := texttemplate.New(name).Option("missingkey=error").ParseFS(templateFiles, "templates/"+name+".txt")
		if err != nil {
			return nil, err
		}
		h, err := htmltemplate.New(name).Option("missingkey=error").ParseFS(templateFiles, "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		r.text[name], r.html[name] = t, h
	}
	return r, nil
}

// Rendered is a message's three rendered parts.
type Rendered struct {
	Subject string
	Text    string
	HTML    string
}

// Render fills template's subject, plain-text and HTML parts with data.
// The HTML part is escaped by html/template.
func (r *Renderer) Render(template string, data map[string]string) (Rendered, error) {
	var out Rendered
	text, html := r.text[template], r.html[template]
	if text == nil || html == nil {
		return out, fmt.Errorf("courier: no template %q", template)
	}
	var b bytes.Buffer
	if err := text.ExecuteTemplate(&b, "subject", data); err != nil {
		return out, err
	}
	out.Subject = strings.TrimSpace(b.String())
	b.Reset()
	if err := text.ExecuteTemplate(&b, "text", data); err != nil {
		return out, err
	}
	out.Text = b.String()
	b.Reset()
	if err := html.ExecuteTemplate(&b, "html", data); err != nil {
		return out, err
	}
	out.HTML = b.String()
	return out, nil
}
