// Package ids is the platform's one spelling of an identifier: a UUID in
// its canonical lower-case form, 36 characters, no prefix, braces or URN.
// Every service issues ids in this form, so PostgreSQL's uuid type (which
// would match any spelling) and SQLite's text column (which matches only
// the exact one) answer alike.
package ids

import "github.com/google/uuid"

// New returns a new id, time-ordered (UUIDv7): rows keyed by ids issued
// one after another land side by side in their indexes, so a table that
// grows by the thousand a second (events, deliveries, tokens) appends to
// its last pages instead of touching a random page, soon out of the
// cache, for every insert. Only its first 48 bits tell anything: when it
// was issued, to the millisecond.
func New() string { return uuid.Must(uuid.NewV7()).String() }

// Parse returns s in the platform's spelling, accepting the canonical
// 36-character form in either case (a client may upper-case an id it was
// given); ok is false for anything else.
func Parse(s string) (id string, ok bool) {
	if len(s) != 36 {
		return "", false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// Valid reports whether s is an id in exactly the platform's spelling:
// lower-case hexadecimal digits in groups of 8, 4, 4, 4 and 12, joined by
// hyphens. It allocates nothing: every authenticated request checks two.
func Valid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
