package pantry

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/textrule"
)

// The limits of pantry.md section 2.
const (
	MinSlug            = 3
	MaxSlug            = 40
	MaxName            = 80
	MaxSummary         = 200
	MaxDescription     = 20 << 10
	MaxTags            = 8
	MaxTag             = 32
	MaxURL             = 2048
	MaxQuery           = 200
	DefaultLimit       = 20
	MaxLimit           = 100
	msgValidation      = "the project has invalid fields"
	msgQueryValidation = "the query has invalid parameters"
)

// Field error codes (errs.FieldError.Code).
const (
	RuleRequired     = "required"
	RuleTooShort     = "too_short"
	RuleTooLong      = "too_long"
	RuleInvalid      = "invalid"
	RuleReserved     = "reserved"
	RuleMixedScripts = "mixed_scripts"
	RuleInvisible    = "invisible_characters"
	RuleNotHTTPS     = "not_https"
	RuleCredentials  = "credentials_in_url"
	RuleTooMany      = "too_many"
	RuleUnknown      = "unknown_value"
)

// reserved are the slugs that name pages and routes, never a project.
var reserved = map[string]bool{
	"new": true, "api": true, "admin": true, "edit": true, "settings": true, "search": true,
	"tags": true, "me": true, "projects": true, "static": true, "assets": true, "login": true,
	"logout": true, "auth": true, "v1": true, "www": true, "help": true, "about": true,
	"account": true, "accounts": true, "star": true, "stars": true, "openapi": true,
}

// usesAllowed is the closed set of `uses`.
var usesAllowed = []string{"courier", "identity", "kit", "platform"}

// UsesValues lists what `uses` may hold, sorted.
func UsesValues() []string { return slices.Clone(usesAllowed) }

// Reserved reports whether slug names a page or route rather than a project.
func Reserved(slug string) bool { return reserved[slug] }

// CheckSlug returns the rule slug breaks, or "": 3–40 characters of
// lower-case letters (one script), digits and single dashes inside, not a
// reserved word.
func CheckSlug(slug string) string {
	n := utf8.RuneCountInString(slug)
	switch {
	case !utf8.ValidString(slug) || !norm.NFC.IsNormalString(slug):
		return RuleInvalid
	case n < MinSlug:
		return RuleTooShort
	case n > MaxSlug:
		return RuleTooLong
	case strings.HasPrefix(slug, "-") || strings.HasSuffix(slug, "-") || strings.Contains(slug, "--"):
		return RuleInvalid
	}
	for _, r := range slug {
		if r == '-' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') {
			continue
		}
		if r < utf8.RuneSelf || !unicode.IsLetter(r) || !unicode.IsLower(r) {
			return RuleInvalid
		}
	}
	if !textrule.SingleScript(slug) {
		return RuleMixedScripts
	}
	if reserved[slug] {
		return RuleReserved
	}
	return ""
}

// SlugFrom makes a slug of a (valid) name: lower case, every run of other
// characters one dash, at most MaxSlug characters. The result may still
// break a rule (too short, reserved); the caller checks it.
func SlugFrom(name string) string {
	var b strings.Builder
	dash := false
	n := 0
	for _, r := range strings.ToLower(name) {
		if n >= MaxSlug {
			break
		}
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || (r >= utf8.RuneSelf && unicode.IsLetter(r) && unicode.IsLower(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
				n++
			}
			dash = false
			b.WriteRune(r)
			n++
			continue
		}
		dash = true
	}
	return strings.Trim(b.String(), "-")
}

// textRule maps textrule's errors to field rules.
func textRule(err error) string {
	switch {
	case errors.Is(err, textrule.ErrMixedScripts):
		return RuleMixedScripts
	case errors.Is(err, textrule.ErrInvisible):
		return RuleInvisible
	default:
		return RuleInvalid
	}
}

// checkName returns the stored form of a project name.
func checkName(s string, f *errs.Fields) string {
	v, err := textrule.Name(s)
	switch {
	case err != nil:
		f.Add("name", textRule(err))
	case v == "":
		f.Add("name", RuleRequired)
	case utf8.RuneCountInString(v) > MaxName:
		f.Add("name", RuleTooLong)
	}
	return v
}

// checkText returns s trimmed and in NFC, recording field's rule broken.
func checkText(field, s string, multiline bool, max int, runes bool, f *errs.Fields) string {
	v, err := textrule.Text(strings.TrimSpace(s), multiline)
	if err != nil {
		f.Add(field, textRule(err))
		return ""
	}
	n := len(v)
	if runes {
		n = utf8.RuneCountInString(v)
	}
	if n > max {
		f.Add(field, RuleTooLong)
	}
	return v
}

// checkURL accepts "" or an absolute https URL with a host and no
// credentials; pantry never fetches it.
func checkURL(field, s string, f *errs.Fields) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > MaxURL {
		f.Add(field, RuleTooLong)
		return ""
	}
	if _, err := textrule.Text(s, false); err != nil || strings.ContainsAny(s, " \\") {
		f.Add(field, RuleInvalid)
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		f.Add(field, RuleInvalid)
	case !strings.EqualFold(u.Scheme, "https"):
		f.Add(field, RuleNotHTTPS)
	case u.User != nil:
		f.Add(field, RuleCredentials)
	default:
		return s
	}
	return ""
}

// checkTags returns the tags deduplicated and sorted.
func checkTags(tags []string, f *errs.Fields) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if !TagValid(t) {
			f.Add("tags", RuleInvalid)
			return nil
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > MaxTags {
		f.Add("tags", RuleTooMany)
		return nil
	}
	slices.Sort(out)
	return out
}

// TagValid reports whether t is a tag: 1–32 lower-case ASCII letters,
// digits and single dashes inside.
func TagValid(t string) bool {
	if t == "" || len(t) > MaxTag || t[0] == '-' || t[len(t)-1] == '-' || strings.Contains(t, "--") {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// checkUses returns uses deduplicated and sorted.
func checkUses(uses []string, f *errs.Fields) []string {
	out := make([]string, 0, len(uses))
	for _, u := range uses {
		if !slices.Contains(usesAllowed, u) {
			f.Add("uses", RuleUnknown)
			return nil
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

func checkVisibility(v string, f *errs.Fields) string {
	switch v {
	case "":
		return VisibilityPublic
	case VisibilityPublic, VisibilityUnlisted:
		return v
	}
	f.Add("visibility", RuleUnknown)
	return ""
}

// checkMediaID returns a logo's canonical id, "" for none.
func checkMediaID(s string, f *errs.Fields) string {
	if s == "" {
		return ""
	}
	id, ok := ids.Parse(s)
	if !ok {
		f.Add("logo_media_id", RuleInvalid)
		return ""
	}
	return id
}

// CheckQuery validates and completes a list query: the search text under
// the text rules (any FTS or tsquery syntax in it is the store's to make
// harmless), a known tag, use and sort, a limit in range.
func CheckQuery(q Query) (Query, error) {
	var f errs.Fields
	q.Q = checkText("q", q.Q, false, MaxQuery, true, &f)
	if q.Tag != "" && !TagValid(q.Tag) {
		f.Add("tag", RuleInvalid)
	}
	if q.Uses != "" && !slices.Contains(usesAllowed, q.Uses) {
		f.Add("uses", RuleUnknown)
	}
	switch q.Sort {
	case "":
		q.Sort = SortRecent
		if q.Q != "" {
			q.Sort = SortRelevance
		}
	case SortRecent, SortStars, SortName:
	case SortRelevance:
		if q.Q == "" {
			q.Sort = SortRecent
		}
	default:
		f.Add("sort", RuleUnknown)
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultLimit
	case q.Limit < 0 || q.Limit > MaxLimit:
		f.Add("limit", RuleInvalid)
	}
	if len(q.Cursor) > 512 {
		f.Add("cursor", RuleInvalid)
	}
	return q, f.Err(CodeValidation, msgQueryValidation)
}
