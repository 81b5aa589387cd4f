package identity

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// List limits: a page holds DefaultPageSize items unless the caller asks
// for up to MaxPageSize.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// Cursor is a keyset position: the (created_at, id) of the last item
// served. Items are ordered by both, so a page boundary is stable under
// concurrent inserts (new items sort after every existing one).
type Cursor struct {
	At time.Time
	ID string
}

// PageRequest asks for the items after Cursor (nil: from the start).
type PageRequest struct {
	After *Cursor
	Limit int
}

// Encode is the opaque form callers pass back as ?cursor=.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID))
}

func decodeCursor(s string) (*Cursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	micros, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || !ids.Valid(id) {
		return nil, false
	}
	return &Cursor{At: time.UnixMicro(n).UTC(), ID: id}, true
}

// ParsePage reads the cursor and limit query parameters ("" for absent).
// Errors: CodeValidation (cursor invalid; limit invalid or too_large).
func ParsePage(cursor, limit string) (PageRequest, error) {
	p := PageRequest{Limit: DefaultPageSize}
	var f errs.Fields
	if cursor != "" {
		c, ok := decodeCursor(cursor)
		if !ok {
			f.Add("cursor", RuleInvalid)
		}
		p.After = c
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		switch {
		case err != nil || n < 1:
			f.Add("limit", RuleInvalid)
		case n > MaxPageSize:
			f.Add("limit", RuleTooLarge)
		default:
			p.Limit = n
		}
	}
	return p, f.Err(CodeValidation, "cursor must be one this service issued; limit a whole number from 1 to 200")
}
