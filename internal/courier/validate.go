package courier

import (
	"net/mail"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/textrule"
)

// Field rule codes answered in a 422's errors.
const (
	RuleRequired = "required"
	RuleInvalid  = "invalid"
	RuleUnknown  = "unknown"
	RuleTooLong  = "too_long"
)

const (
	maxAddress   = 254
	maxDataValue = 2048
)

// NormalizeAddress is the form addresses are matched in (suppressions,
// recipient ids): trimmed and lower-cased.
func NormalizeAddress(a string) string { return strings.ToLower(strings.TrimSpace(a)) }

// validAddress reports whether a is one bare address (no display name, no
// angle brackets), short enough for SMTP, and within the address rules
// identity applies (textrule.Email: no invisible characters, nothing
// fullwidth or outside the PRECIS IdentifierClass, no local part or
// domain label mixing scripts).
func validAddress(a string) bool {
	if a == "" || len(a) > maxAddress || a != strings.TrimSpace(a) {
		return false
	}
	if _, err := textrule.Email(a); err != nil {
		return false
	}
	p, err := mail.ParseAddress(a)
	if err != nil || p.Name != "" || p.Address != a {
		return false
	}
	at := strings.LastIndexByte(a, '@')
	return at > 0 && strings.Contains(a[at+1:], ".")
}

func validLink(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && !hasControl(s)
}

// hasControl reports what textrule refuses in a one-line value: control,
// bidi-control, zero-width and other invisible characters, and invalid
// UTF-8, which have no place in a header or a one-line value.
func hasControl(s string) bool {
	_, err := textrule.Text(s, false)
	return err != nil
}

// SendRequest is POST /v1/emails's body.
type SendRequest struct {
	Template string
	To       string
	Locale   *string
	Data     map[string]any
}

// validate checks req and returns the template data as strings, NFC
// normalized, or a CodeValidation error naming every bad field.
func (req SendRequest) validate() (map[string]string, error) {
	var f errs.Fields
	spec, known := templateSpecs[req.Template]
	switch {
	case req.Template == "":
		f.Add("template", RuleRequired)
	case !known:
		f.Add("template", RuleUnknown)
	}
	switch {
	case req.To == "":
		f.Add("to", RuleRequired)
	case !validAddress(req.To):
		f.Add("to", RuleInvalid)
	}
	if req.Locale != nil {
		if _, err := language.Parse(*req.Locale); err != nil || len(*req.Locale) > 35 {
			f.Add("locale", RuleInvalid)
		}
	}
	data := map[string]string{}
	if known {
		need := map[string]bool{}
		for _, k := range spec.keys {
			need[k] = true
			v, ok := req.Data[k]
			s, isString := v.(string)
			switch {
			case !ok || v == nil:
				f.Add("data."+k, RuleRequired)
				continue
			case !isString || strings.TrimSpace(s) == "" || hasControl(s) || !utf8.ValidString(s):
				f.Add("data."+k, RuleInvalid)
				continue
			case utf8.RuneCountInString(s) > maxDataValue:
				f.Add("data."+k, RuleTooLong)
				continue
			}
			data[k] = norm.NFC.String(s)
		}
		for _, k := range spec.links {
			if v, ok := data[k]; ok && !validLink(v) {
				delete(data, k)
				f.Add("data."+k, RuleInvalid)
			}
		}
		for _, k := range spec.emails {
			if v, ok := data[k]; ok && !validAddress(v) {
				delete(data, k)
				f.Add("data."+k, RuleInvalid)
			}
		}
		for k := range req.Data {
			if !need[k] {
				f.Add("data."+k, RuleUnknown)
			}
		}
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return nil, err
	}
	return data, nil
}
