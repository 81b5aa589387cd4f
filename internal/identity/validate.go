package identity

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/textrule"
)

// Limits of identity's inputs.
const (
	PasswordMin    = 8
	PasswordMax    = 128
	NameMax        = 120
	DisplayNameMax = 120
	EmailMax       = 254
	SlugMax        = 63
)

// NormalizeEmail trims an address, lower-cases it and puts it in NFC:
// addresses are compared case-insensitively, and a decomposed "é" is the
// same address as a precomposed one.
func NormalizeEmail(s string) string { return norm.NFC.String(strings.ToLower(strings.TrimSpace(s))) }

// normalizeText trims a text field and puts it in NFC, the one form
// identity stores.
func normalizeText(s string) string { return norm.NFC.String(strings.TrimSpace(s)) }

// validEmail accepts a bare address (no display name, no angle brackets)
// with a local part and a domain.
func validEmail(s string) bool {
	if s == "" || len(s) > EmailMax {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1
}

// checkEmail validates a normalized address: well formed, no invisible
// characters, and no local part or domain label mixing scripts (a
// Cyrillic "а" in "аlice@example.com" is not Alice's address).
func checkEmail(f *errs.Fields, email string) {
	switch {
	case email == "":
		f.Add("email", RuleRequired)
	case !validEmail(email):
		f.Add("email", RuleInvalid)
	default:
		if _, err := textrule.Email(email); err != nil {
			f.Add("email", RuleInvalid)
		}
	}
}

func checkPassword(f *errs.Fields, pw string) {
	switch n := utf8.RuneCountInString(pw); {
	case n < PasswordMin:
		f.Add("password", RuleTooShort)
	case n > PasswordMax:
		f.Add("password", RuleTooLong)
	}
}

// hasControl reports whether s holds a character no text field takes
// (textrule: controls, bidi controls, zero-width and other invisible
// characters): a bidi override makes a query read as another, and
// PostgreSQL cannot store NUL in text at all (the write would fail as an
// internal error instead of a field error).
func hasControl(s string) bool {
	_, err := textrule.Text(s, false)
	return err != nil
}

// normalizeName puts a name (an account's, a display name, an API key's
// or a client's) in the form identity stores, textrule.Name's: trimmed,
// NFC, runs of spaces made one. ok is false when the name breaks
// textrule's name rules (invisible or control characters, fullwidth or
// other compatibility characters, a word mixing scripts such as "Аcme"
// with a Cyrillic "А"); name is then only trimmed, for the length rules.
func normalizeName(s string) (name string, ok bool) {
	v, err := textrule.Name(s)
	if err != nil {
		return normalizeText(s), false
	}
	return v, true
}

// checkAccountName validates an account name and returns the form to
// store, from which the slug derives.
func checkAccountName(f *errs.Fields, raw string) string {
	name, ok := normalizeName(raw)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		f.Add("name", RuleTooShort)
	case n > NameMax:
		f.Add("name", RuleTooLong)
	case !ok:
		f.Add("name", RuleInvalid)
	case Slugify(name, SlugMax) == "":
		// Nothing ASCII survives (a name in another script only): there is
		// no handle to derive, and a generated one would break the rule
		// that two names deriving one handle collide.
		f.Add("name", RuleInvalid)
	}
	return name
}

// Slugify derives a handle from s: accents folded to ASCII where possible,
// lower-case ASCII letters and digits, runs of anything else collapsed to a
// single dash, no dash at either end, at most max characters (cut at a
// dash where possible). It returns "" when nothing remains.
func Slugify(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue // combining accent left by decomposition
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(unicode.ToLower(r))
		default:
			dash = true
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
		if i := strings.LastIndexByte(out, '-'); i > max/2 {
			out = out[:i]
		}
		out = strings.TrimRight(out, "-")
	}
	return out
}

// ValidSlug reports whether s is a well-formed handle.
func ValidSlug(s string) bool {
	if s == "" || len(s) > SlugMax || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}
