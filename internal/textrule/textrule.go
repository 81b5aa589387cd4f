// Package textrule holds the rules every service applies to text it
// stores: one normal form (NFC), so "é" typed precomposed or decomposed is
// one string; no character a reader cannot see or that reorders what they
// see (control, bidi-control, zero-width, format and other default-ignorable
// characters such as U+3164 HANGUL FILLER and the variation selectors); and,
// for names and email addresses, the PRECIS rules (RFC 8264) through
// golang.org/x/text/secure/precis with one step more: a name or an address
// is refused, never silently rewritten, when PRECIS would change it
// (fullwidth "Ａｃｍｅ" is not stored as, nor taken for, "Acme"), and each of
// its words, its local part and each label of its domain stays within one
// script, so "Аcme" or "аlice@example.com" with a Cyrillic "а" is not taken
// for the Latin one.
// It knows no field names and no error envelope: callers map its errors
// to their own field errors.
package textrule

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/norm"
)

// Errors the checks return.
var (
	// ErrInvisible is a control, bidi-control, zero-width, format or other
	// default-ignorable character, or a line or paragraph separator.
	ErrInvisible = errors.New("textrule: invisible or control character")
	// ErrInvalidUTF8 is a string that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("textrule: invalid UTF-8")
	// ErrMixedScripts is a word of a name, an email local part or a
	// domain label mixing scripts.
	ErrMixedScripts = errors.New("textrule: mixed scripts")
	// ErrCompatibility is a fullwidth, halfwidth or other compatibility
	// character (one NFKC or PRECIS width mapping would replace), such as
	// "Ａ" for "A" or "𝐀" for "A".
	ErrCompatibility = errors.New("textrule: fullwidth or other compatibility character")
	// ErrDisallowed is a character the PRECIS class of the field does not
	// take: an unassigned code point, an old Hangul jamo, or in an email
	// address a space, symbol or punctuation outside ASCII.
	ErrDisallowed = errors.New("textrule: character not allowed")
)

// Text returns s in NFC, or an error when s holds a character no text
// field accepts. With multiline, line breaks and tabs are allowed (free
// text such as release notes). A variation selector is taken only right
// after a symbol, where it picks an emoji's presentation ("❤️"); anywhere
// else it is invisible.
func Text(s string, multiline bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", ErrInvalidUTF8
	}
	prev := rune(-1)
	for _, r := range s {
		switch {
		case multiline && (r == '\n' || r == '\r' || r == '\t'):
		case presentationSelector(r) && prev >= 0 && unicode.Is(unicode.So, prev):
		case invisible(r):
			return "", ErrInvisible
		}
		prev = r
	}
	return norm.NFC.String(s), nil
}

// presentationSelector reports U+FE0E and U+FE0F, the variation selectors
// that choose text or emoji presentation.
func presentationSelector(r rune) bool { return r == '\ufe0e' || r == '\ufe0f' }

// invisible reports the characters no text field takes: C0 and C1
// controls (Cc), format characters (Cf: the bidi embeddings, overrides,
// isolates and marks, zero-width space, joiners and the byte-order mark,
// soft hyphen, tags), the line and paragraph separators (Zl, Zp), and the
// rest of Unicode's Default_Ignorable_Code_Point: the variation selectors
// and the other default-ignorable characters (the Hangul fillers U+115F,
// U+1160, U+3164 and U+FFA0, the combining grapheme joiner, the Khmer
// inherent vowels, and the reserved ranges).
func invisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) ||
		r == '\u180e' // Mongolian vowel separator: zero width, Zs in old tables
}

// Name checks a name a person or a team is known by (an account's or a
// team's name, a display name, an API key's or a client's name) after
// trimming it, and returns it in its stored form: Text's rules, no
// variation selector at all, nothing a compatibility mapping (NFKC, as
// the PRECIS Nickname profile of RFC 8266 applies) would change, only
// what the Nickname profile's class allows (ErrDisallowed), runs of
// spaces collapsed to one as that profile does, and no word (a run
// between spaces) mixing scripts. "Zoë", "東京チーム" and "Acme Россия" pass;
// "Аcme" (Cyrillic А), "Ａｃｍｅ" and "a\u3164b" do not. A blank name is
// "" without an error: whether a name is required is the caller's rule.
func Name(s string) (string, error) {
	v, err := Text(strings.TrimSpace(s), false)
	if err != nil || v == "" {
		return "", err
	}
	if strings.ContainsFunc(v, presentationSelector) {
		return "", ErrInvisible
	}
	if !norm.NFKC.IsNormalString(v) {
		return "", ErrCompatibility
	}
	out, err := precis.Nickname.String(v)
	if err != nil {
		return "", ErrDisallowed
	}
	for _, word := range strings.Fields(out) {
		if !SingleScript(word) {
			return "", ErrMixedScripts
		}
	}
	return out, nil
}

// Email applies Text to an address, then the PRECIS IdentifierClass to
// its local part and its domain (RFC 8265's UsernameCasePreserved
// profile, which SMTPUTF8 addresses follow in practice): a character the
// class refuses is ErrDisallowed, one its width mapping would change
// (fullwidth "ａｌｉｃｅ") ErrCompatibility. Then it refuses an address whose
// local part or a label of its domain mixes scripts. Labels are judged one
// by one, as browsers judge internationalized domains: "пример.com" (a
// Cyrillic name under a Latin top-level domain) is ordinary, "exаmple.com"
// is not. Case is the caller's to fold. The address's form (one @, a
// domain) is the caller's rule too; an address without @ is checked as one
// part.
func Email(s string) (string, error) {
	v, err := Text(s, false)
	if err != nil {
		return "", err
	}
	local, domain := v, ""
	if at := strings.LastIndexByte(v, '@'); at >= 0 {
		local, domain = v[:at], v[at+1:]
	}
	if err := identifier(local); err != nil {
		return "", err
	}
	if !SingleScript(local) {
		return "", ErrMixedScripts
	}
	for _, label := range strings.Split(domain, ".") {
		if err := identifier(label); err != nil {
			return "", err
		}
		if !SingleScript(label) {
			return "", ErrMixedScripts
		}
	}
	return v, nil
}

// identifier checks the local part or one domain label against the
// UsernameCasePreserved profile: allowed, and unchanged by it. Labels go
// one by one, as IDNA applies the bidi rule: "דוגמה.com" is two labels of
// one direction each.
func identifier(part string) error {
	if part == "" {
		return nil
	}
	out, err := precis.UsernameCasePreserved.String(part)
	switch {
	case err != nil:
		return ErrDisallowed
	case out != part:
		return ErrCompatibility
	}
	return nil
}

// SingleScript reports whether the letters of s belong to one script, or
// to one of the combinations Unicode's "highly restrictive" level (UTS #39
// section 5.2) allows: Latin with Han, Hiragana and Katakana; Latin with
// Han and Bopomofo; Latin with Han and Hangul. Digits, punctuation and
// combining marks (scripts Common and Inherited) count for none.
func SingleScript(s string) bool {
	var (
		seen  scriptSet
		alone *unicode.RangeTable // the one script outside the combinations
	)
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
				seen |= latin
			}
			continue
		}
		if unicode.In(r, unicode.Common, unicode.Inherited) {
			continue
		}
		if set := combining(r); set != 0 {
			seen |= set
			continue
		}
		if alone != nil {
			if unicode.Is(alone, r) {
				continue
			}
			return false
		}
		if alone = scriptTable(r); alone == nil {
			return false // unassigned: no script to be sure of
		}
	}
	if alone != nil {
		return seen == 0
	}
	for _, allowed := range []scriptSet{
		latin | han | hiragana | katakana,
		latin | han | bopomofo,
		latin | han | hangul,
	} {
		if seen&^allowed == 0 {
			return true
		}
	}
	return false
}

// scriptSet is a set of the scripts UTS #39 lets combine.
type scriptSet uint8

const (
	latin scriptSet = 1 << iota
	han
	hiragana
	katakana
	bopomofo
	hangul
)

// combining returns r's script when it is one that may combine, else 0.
func combining(r rune) scriptSet {
	for _, n := range []struct {
		table *unicode.RangeTable
		set   scriptSet
	}{
		{unicode.Latin, latin}, {unicode.Han, han}, {unicode.Hiragana, hiragana},
		{unicode.Katakana, katakana}, {unicode.Bopomofo, bopomofo}, {unicode.Hangul, hangul},
	} {
		if unicode.Is(n.table, r) {
			return n.set
		}
	}
	return 0
}

// scriptTable returns the table of r's script, or nil when r has none.
func scriptTable(r rune) *unicode.RangeTable {
	for _, t := range unicode.Scripts {
		if unicode.Is(t, r) {
			return t
		}
	}
	return nil
}
