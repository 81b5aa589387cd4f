package semver

import (
	"strings"
	"unicode"
)

// forms lists the accepted range spellings for error messages.
const forms = "^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z"

// op is a range's operator. The zero value is "every version" so that the
// zero Range is Any(), matching a null version_range.
type op uint8

const (
	opAny op = iota
	opExact
	opCaret
	opTilde
	opGTE
)

// prefix is the operator's spelling in the range grammar.
func (o op) prefix() string {
	switch o {
	case opCaret:
		return "^"
	case opTilde:
		return "~"
	case opGTE:
		return ">="
	default:
		return ""
	}
}

// Range is a parsed version range: ^X.Y.Z, ~X.Y.Z, >=X.Y.Z, an exact X.Y.Z,
// or every version (Any, also the zero value). Ranges are comparable with ==,
// which compares spelling; two spellings may admit the same versions (">=0.0.0"
// and Any), which a.Covers(b) && b.Covers(a) detects.
type Range struct {
	op op
	v  Version // the version written after the operator; zero for Any
}

// Any returns the range that admits every version: a null version_range.
func Any() Range { return Range{} }

// ParseRange parses one constraint of the entitlement grammar after trimming
// surrounding white space: "^X.Y.Z", "~X.Y.Z", ">=X.Y.Z" or "X.Y.Z", with X.Y.Z
// as ParseVersion accepts it. An empty string is refused rather than read as
// Any, because "no range" is the caller's decision (a null or blank field),
// not something a malformed string should silently become. It returns a
// *SyntaxError whose message says what is wrong.
func ParseRange(s string) (Range, error) {
	r, reason := parseRange(strings.TrimSpace(s))
	if reason != "" {
		return Range{}, &SyntaxError{What: "version range", Input: s, Reason: reason}
	}
	return r, nil
}

// parseRange parses a trimmed range, returning the reason it is refused or "".
func parseRange(s string) (Range, string) {
	if s == "" {
		return Range{}, "is empty; want " + forms
	}
	if strings.IndexFunc(s, func(c rune) bool { return unicode.IsSpace(c) || c == '|' }) >= 0 {
		return Range{}, "must be a single constraint (" + forms + "); unions, hyphen ranges and combined comparators are not supported"
	}
	var o op
	var rest string
	switch {
	case strings.HasPrefix(s, ">="):
		o, rest = opGTE, s[2:]
	case s[0] == '^':
		o, rest = opCaret, s[1:]
	case s[0] == '~':
		o, rest = opTilde, s[1:]
	case strings.IndexByte("<>=!", s[0]) >= 0:
		n := 1
		for n < len(s) && strings.IndexByte("<>=!", s[n]) >= 0 {
			n++
		}
		return Range{}, "operator " + s[:n] + " is not supported; want " + forms
	default:
		o, rest = opExact, s
	}
	switch rest {
	case "":
		return Range{}, "missing version after " + o.prefix() + "; want " + forms
	case "*", "x", "X":
		return Range{}, "wildcards are not supported; want " + forms
	}
	v, reason := parseVersion(rest)
	if reason != "" {
		return Range{}, "version " + reason
	}
	return Range{op: o, v: v}, ""
}

// String returns the range in the grammar ParseRange accepts ("" for Any).
// The grammar has one spelling per range, so this is the trimmed input.
func (r Range) String() string {
	if r.op == opAny {
		return ""
	}
	return r.op.prefix() + r.v.String()
}

// IsAny reports whether r is Any(), the range of a null version_range.
func (r Range) IsAny() bool { return r.op == opAny }

// upper is an exclusive upper bound; the zero value is unbounded.
type upper struct {
	v       Version
	bounded bool
}

// below reports whether v is below the bound.
func (u upper) below(v Version) bool { return !u.bounded || v.Compare(u.v) < 0 }

// atMost reports whether bound u is no higher than bound w.
func (u upper) atMost(w upper) bool {
	switch {
	case !w.bounded:
		return true
	case !u.bounded:
		return false
	default:
		return u.v.Compare(w.v) <= 0
	}
}

// afterMajor is the first version above every X.*.*; none exists above MAX.*.*.
func afterMajor(x uint64) upper {
	if x == ^uint64(0) {
		return upper{}
	}
	return upper{v: Version{Major: x + 1}, bounded: true}
}

// afterMinor is the first version above every X.Y.*, carrying into the major
// part when Y is the maximum rather than wrapping to X.0.0.
func afterMinor(x, y uint64) upper {
	if y == ^uint64(0) {
		return afterMajor(x)
	}
	return upper{v: Version{Major: x, Minor: y + 1}, bounded: true}
}

// afterPatch is the first version above X.Y.Z, carrying like afterMinor.
func afterPatch(v Version) upper {
	if v.Patch == ^uint64(0) {
		return afterMinor(v.Major, v.Minor)
	}
	return upper{v: Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}, bounded: true}
}

// interval is the one model behind Contains and Covers: r admits exactly the
// versions v with lo <= v < hi. The interval is never empty (hi > lo).
func (r Range) interval() (lo Version, hi upper) {
	v := r.v
	switch r.op {
	case opExact:
		return v, afterPatch(v)
	case opTilde:
		return v, afterMinor(v.Major, v.Minor)
	case opCaret:
		// npm: ^ keeps the leftmost non-zero part fixed; for 0.0.Z that is
		// the patch, so ^0.0.Z admits only 0.0.Z.
		switch {
		case v.Major > 0:
			return v, afterMajor(v.Major)
		case v.Minor > 0:
			return v, afterMinor(0, v.Minor)
		default:
			return v, afterPatch(v)
		}
	case opGTE:
		return v, upper{}
	default:
		return Version{}, upper{}
	}
}

// Contains reports whether r admits v.
func (r Range) Contains(v Version) bool {
	lo, hi := r.interval()
	return v.Compare(lo) >= 0 && hi.below(v)
}

// Covers reports whether r admits every version other admits: the rule by
// which a grant's range covers a requested range. It agrees with npm's
// semver.subset(other, r) on this grammar. Because no interval is empty,
// containment of intervals is exactly containment of their version sets.
func (r Range) Covers(other Range) bool {
	lo, hi := r.interval()
	olo, ohi := other.interval()
	return lo.Compare(olo) <= 0 && ohi.atMost(hi)
}
