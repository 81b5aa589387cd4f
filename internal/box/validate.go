package box

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/semver"
	"github.com/platformco/platform/internal/textrule"
)

// Length caps of free-text fields, in characters.
const (
	maxSourceLen    = 100
	maxReferenceLen = 255
	maxNotesLen     = 10000
)

// List page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// problems collects validation failures: a message per failure naming the
// field and the rule (joined into the 422 message) and the field errors.
type problems struct {
	msgs   []string
	fields errs.Fields
}

func (p *problems) add(field, rule, msg string) {
	p.msgs = append(p.msgs, field+" "+msg)
	p.fields.Add(field, rule)
}

func (p *problems) err() error {
	if len(p.msgs) == 0 {
		return nil
	}
	return &errs.Error{Code: CodeUnprocessable, Message: strings.Join(p.msgs, ", "), Fields: p.fields}
}

// blank reports whether s is absent, empty or only white space.
func blank(s *string) bool { return s == nil || strings.TrimSpace(*s) == "" }

// accountID validates a required account id and returns it lower-cased, the
// form identity issues, so one account is never stored under two spellings.
func (p *problems) accountID(field string, s *string) string {
	if blank(s) {
		p.add(field, "required", "is required")
		return ""
	}
	v, ok := ids.Parse(strings.TrimSpace(*s))
	if !ok {
		p.add(field, "uuid", "must be a UUID")
		return ""
	}
	return v
}

var productList = strings.Join(Products, ", ")

// product validates a product; blank means def when def is not empty.
func (p *problems) product(field string, s *string, def string) string {
	if blank(s) {
		if def == "" {
			p.add(field, "required", "is required")
		}
		return def
	}
	v := strings.TrimSpace(*s)
	if !IsProduct(v) {
		p.add(field, "enum", "must be one of "+productList)
		return ""
	}
	return v
}

// versionRange validates an optional range; blank means every version.
func (p *problems) versionRange(field string, s *string) (semver.Range, *string) {
	if blank(s) {
		return semver.Any(), nil
	}
	r, err := semver.ParseRange(*s)
	if err != nil {
		var syn *semver.SyntaxError
		if errors.As(err, &syn) {
			p.add(field, "semver_range", syn.Reason)
		} else {
			p.add(field, "semver_range", "must be ^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z")
		}
		return semver.Range{}, nil
	}
	text := r.String()
	return r, &text
}

// text validates optional free text: blank is stored as null, the value is
// trimmed, put in NFC, capped at max characters and free of the characters
// textrule refuses (controls, bidi controls, zero-width characters; line
// breaks and tabs are allowed when multiline).
func (p *problems) text(field string, s *string, max int, multiline bool) *string {
	if blank(s) {
		return nil
	}
	v, err := textrule.Text(strings.TrimSpace(*s), multiline)
	if err != nil {
		p.add(field, "control_characters", "must not contain control, bidi-control, zero-width or other invisible characters")
		return nil
	}
	if utf8.RuneCountInString(v) > max {
		p.add(field, "too_long", "must be at most "+strconv.Itoa(max)+" characters")
		return nil
	}
	return &v
}

// enum validates an optional filter value against allowed.
func (p *problems) enum(field, s string, allowed ...string) string {
	if s == "" {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	p.add(field, "enum", "must be one of "+strings.Join(allowed, ", "))
	return ""
}

// limit validates a page size.
func (p *problems) limit(s string) int {
	if s == "" {
		return DefaultPageSize
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxPageSize {
		p.add("limit", "range", "must be an integer from 1 to "+strconv.Itoa(MaxPageSize))
		return 0
	}
	return n
}

// Cursors are opaque to callers: the id of the last row served, encoded.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

func (p *problems) cursor(s string) int64 {
	if s == "" {
		return 0
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), "id:"); ok {
			if id, err := strconv.ParseInt(rest, 10, 64); err == nil && id > 0 {
				return id
			}
		}
	}
	p.add("cursor", "malformed", "is not a cursor this service issued")
	return 0
}

// A timeline cursor is the key of the last item served: its time in
// microseconds since the epoch and its two ids.
func encodeTimelineCursor(k TimelineKey) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "tl:%d:%d:%d", k.OccurredAt.UnixMicro(), k.ApprovalID, k.ReleaseID))
}

func (p *problems) timelineCursor(s string) *TimelineKey {
	if s == "" {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		var micros, approval, release int64
		parts := strings.Split(string(raw), ":")
		if len(parts) == 4 && parts[0] == "tl" {
			micros, err = strconv.ParseInt(parts[1], 10, 64)
			if err == nil {
				approval, err = strconv.ParseInt(parts[2], 10, 64)
			}
			if err == nil {
				release, err = strconv.ParseInt(parts[3], 10, 64)
			}
			if err == nil && approval >= 0 && release > 0 {
				return &TimelineKey{OccurredAt: time.UnixMicro(micros).UTC(), ApprovalID: approval, ReleaseID: release}
			}
		}
	}
	p.add("cursor", "malformed", "is not a cursor this service issued")
	return nil
}

// parseID reads a positive decimal id from a path; anything else names no row.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}
