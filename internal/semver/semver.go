// Package semver parses release versions and the version-range grammar of
// entitlements (^X.Y.Z, ~X.Y.Z, >=X.Y.Z, X.Y.Z) and answers two questions
// with one model: does a range admit a version, and does one range admit
// every version another admits.
//
// Every range is a half-open interval [lo, hi) over versions, hi possibly
// unbounded. Contains and Covers are both derived from that interval, so the
// two answers can never disagree. Versions have no prerelease or build part,
// which is what makes the interval exact: npm's "<2.0.0-0" and "<2.0.0" admit
// the same release versions.
//
// Numbers go up to the uint64 maximum. Upper bounds are computed by
// incrementing with carry (the version after every X.Y.* is X.(Y+1).0, or
// (X+1).0.0 when Y is the maximum), and a bound past the largest version is
// unbounded. That is not an approximation: no version exists above it.
package semver

import (
	"strconv"
	"strings"
)

// maxInputInError caps how much of a refused input an error repeats, because
// the message goes back to the caller and the input may be arbitrarily long.
const maxInputInError = 64

// SyntaxError reports why a version or range string was refused. Its message
// names the input (truncated) and the rule it broke, and is safe to return to
// the caller that sent it.
type SyntaxError struct {
	What   string // "version" or "version range"
	Input  string // the refused input, untrimmed
	Reason string
}

func (e *SyntaxError) Error() string {
	in := e.Input
	if len(in) > maxInputInError {
		in = in[:maxInputInError] + "..."
	}
	return "invalid " + e.What + " " + strconv.Quote(in) + ": " + e.Reason
}

// Version is a release version X.Y.Z. It has no prerelease or build part.
type Version struct{ Major, Minor, Patch uint64 }

// String returns the version as X.Y.Z, the form ParseVersion accepts.
func (v Version) String() string {
	b := make([]byte, 0, 3*20+2)
	b = strconv.AppendUint(b, v.Major, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.Minor, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.Patch, 10)
	return string(b)
}

// Compare returns -1, 0 or +1 as v sorts before, equal to or after w.
func (v Version) Compare(w Version) int {
	switch {
	case v.Major != w.Major:
		return cmpUint(v.Major, w.Major)
	case v.Minor != w.Minor:
		return cmpUint(v.Minor, w.Minor)
	default:
		return cmpUint(v.Patch, w.Patch)
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}

// ParseVersion parses "X.Y.Z": three decimal numbers up to 18446744073709551615
// without leading zeros, and nothing else (no "v" prefix, no prerelease or
// build suffix, no surrounding space). It returns a *SyntaxError otherwise.
func ParseVersion(s string) (Version, error) {
	v, reason := parseVersion(s)
	if reason != "" {
		return Version{}, &SyntaxError{What: "version", Input: s, Reason: reason}
	}
	return v, nil
}

// parseVersion returns the reason s is refused, or "" with the version.
func parseVersion(s string) (Version, string) {
	if s == "" {
		return Version{}, "is empty; want X.Y.Z"
	}
	if s[0] == 'v' || s[0] == 'V' {
		return Version{}, `has a "v" prefix; want X.Y.Z`
	}
	if i := strings.IndexAny(s, "-+"); i > 0 {
		return Version{}, "has a prerelease or build suffix; want X.Y.Z"
	}
	if n := strings.Count(s, ".") + 1; n != 3 {
		unit := " dot-separated parts"
		if n == 1 {
			unit = " dot-separated part"
		}
		return Version{}, "has " + strconv.Itoa(n) + unit + "; want 3 (X.Y.Z)"
	}
	// Cut rather than Split keeps parsing free of allocations.
	major, rest, _ := strings.Cut(s, ".")
	minor, patch, _ := strings.Cut(rest, ".")
	parts := [3]string{major, minor, patch}
	var nums [3]uint64
	for i, name := range [3]string{"major", "minor", "patch"} {
		n, reason := parseNumber(parts[i])
		if reason != "" {
			return Version{}, name + " part " + reason
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}, ""
}

// parseNumber parses one version part, returning the reason it is refused or "".
func parseNumber(p string) (uint64, string) {
	switch {
	case p == "":
		return 0, "is empty"
	case p == "*" || p == "x" || p == "X":
		return 0, "is a wildcard; wildcards are not supported"
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, "is not a decimal number"
		}
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, "has a leading zero"
	}
	n, err := strconv.ParseUint(p, 10, 64)
	if err != nil {
		// Only overflow is left: the digits were checked above.
		return 0, "exceeds 18446744073709551615"
	}
	return n, ""
}
