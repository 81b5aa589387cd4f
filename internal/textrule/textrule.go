// Package textrule holds the rules every service applies to text it
// stores: one normal form (NFC), so "é" typed precomposed or decomposed is
// one string; no character a reader cannot see or that reorders what they
// see (control, bidi-control, zero-width and other format characters); and
// email addresses whose local part and domain each stay within one script,
// so "аlice@example.com" with a Cyrillic "а" is not taken for Alice's.
// It knows no field names and no error envelope: callers map its errors
// to their own field errors.
package textrule

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Errors the checks return.
var (
	// ErrInvisible is a control, bidi-control, zero-width or other format
	// character, or a line or paragraph separator.
	ErrInvisible = errors.New("textrule: invisible or control character")
	// ErrInvalidUTF8 is a string that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("textrule: invalid UTF-8")
	// ErrMixedScripts is an email local part or domain mixing scripts.
	ErrMixedScripts = errors.New("textrule: mixed scripts")
)

// Text returns s in NFC, or an error when s holds a character no text
// field accepts. With multiline, line breaks and tabs are allowed (free
// text such as release notes).
func Text(s string, multiline bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", ErrInvalidUTF8
	}
	for _, r := range s {
		if invisible(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			return "", ErrInvisible
		}
	}
	return norm.NFC.String(s), nil
}

// invisible reports the characters no text field takes: C0 and C1
// controls (Cc), format characters (Cf: the bidi embeddings, overrides,
// isolates and marks, zero-width space, joiners and the byte-order mark,
// soft hyphen, tags) and the line and paragraph separators (Zl, Zp).
func invisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7f
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) ||
		r == '\u180e' // Mongolian vowel separator: zero width, Zs in old tables
}

// Email applies Text to an address, then refuses it when its local part or
// a label of its domain mixes scripts. Labels are judged one by one, as
// browsers judge internationalized domains: "пример.com" (a Cyrillic name
// under a Latin top-level domain) is ordinary, "exаmple.com" is not. The
// address's form (one @, a domain) is the caller's rule; an address
// without @ is checked as one part.
func Email(s string) (string, error) {
	v, err := Text(s, false)
	if err != nil {
		return "", err
	}
	local, domain := v, ""
	if at := strings.LastIndexByte(v, '@'); at >= 0 {
		local, domain = v[:at], v[at+1:]
	}
	if !SingleScript(local) {
		return "", ErrMixedScripts
	}
	for _, label := range strings.Split(domain, ".") {
		if !SingleScript(label) {
			return "", ErrMixedScripts
		}
	}
	return v, nil
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
