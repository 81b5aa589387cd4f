package semver

import (
	"errors"
	"strings"
	"testing"
)

// top is the largest number a version part can hold.
const top = ^uint64(0)

// mustRange parses s, treating "" as Any() so tables can name a null range.
func mustRange(t testing.TB, s string) Range {
	t.Helper()
	if s == "" {
		return Any()
	}
	r, err := ParseRange(s)
	if err != nil {
		t.Fatalf("ParseRange(%q): %v", s, err)
	}
	return r
}

func mustVersion(t testing.TB, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatalf("ParseVersion(%q): %v", s, err)
	}
	return v
}

// refContains is membership written straight from npm's definitions of the
// operators, with comparisons only and no computed upper bound, so it checks
// the interval model (and its carrying at the uint64 maximum) independently.
func refContains(r Range, v Version) bool {
	b := r.v
	atLeast := v.Compare(b) >= 0
	switch r.op {
	case opAny:
		return true
	case opGTE:
		return atLeast
	case opExact:
		return v == b
	case opTilde:
		return atLeast && v.Major == b.Major && v.Minor == b.Minor
	case opCaret:
		switch {
		case b.Major > 0:
			return atLeast && v.Major == b.Major
		case b.Minor > 0:
			return atLeast && v.Major == 0 && v.Minor == b.Minor
		default:
			return v == b
		}
	}
	panic("unknown op")
}

// coversNPM holds (grant, request, grant.Covers(request)). Every expected
// value was checked against semver.subset(request, grant) from npm semver
// 7.x (7.8.6), with "" passed to npm as "*", and agrees with it.
var coversNPM = []struct {
	grant, request string
	want           bool
}{
	{"^1.2.3", "^1.2.3", true},
	{"^1.2.3", "^1.5.0", true},
	{"^1.2.3", "^1.0.0", false},
	{"^1.2.3", "~1.2.3", true},
	{"^1.2.3", "~1.9.9", true},
	{"^1.2.3", "1.2.3", true},
	{"^1.2.3", "1.2.2", false},
	{"^1.2.3", "2.0.0", false},
	{"^1.2.3", "1.99.99", true},
	{"^1.2.3", ">=1.2.3", false},
	{"^1.2.3", "^2.0.0", false},
	{"^1.2.3", "", false},
	{"^1.2.3", "^1.2.4", true},
	{"^1.2.3", ">=2.0.0", false},
	{"^0.2.3", "^0.2.5", true},
	{"^0.2.3", "^0.3.0", false},
	{"^0.2.3", "~0.2.4", true},
	{"^0.2.3", "0.2.9", true},
	{"^0.2.3", "0.3.0", false},
	{"^0.2.3", "~0.2.3", true},
	{"^0.2.3", "^0.2.2", false},
	{"^0.0.3", "0.0.3", true},
	{"^0.0.3", "^0.0.3", true},
	{"^0.0.3", "0.0.4", false},
	{"^0.0.3", "~0.0.3", false},
	{"~0.0.3", "^0.0.3", true},
	{"^0.0.3", "^0.0.4", false},
	{"~1.2.3", "~1.2.3", true},
	{"~1.2.3", "~1.2.4", true},
	{"~1.2.3", "^1.2.3", false},
	{"~1.2.3", "1.2.9", true},
	{"~1.2.3", "1.3.0", false},
	{"~1.2.3", "~1.3.0", false},
	{"~1.2.3", "~1.2.2", false},
	{"~0.2.3", "^0.2.3", true},
	{"~0.2.3", "^0.2.4", true},
	{">=1.2.3", "^1.2.3", true},
	{">=1.2.3", "^1.2.2", false},
	{">=1.2.3", ">=2.0.0", true},
	{">=1.2.3", ">=1.0.0", false},
	{">=1.2.3", "", false},
	{">=1.2.3", "1.2.3", true},
	{">=1.2.3", "1.2.2", false},
	{">=0.0.0", "", true},
	{"", ">=0.0.0", true},
	{"", "^1.2.3", true},
	{"", "", true},
	{"", "0.0.0", true},
	{"1.2.3", "1.2.3", true},
	{"1.2.3", "1.2.4", false},
	{"1.2.3", "^1.2.3", false},
	{"1.2.3", "~1.2.3", false},
	{"^0.0.0", "0.0.0", true},
	{"^0.0.0", "0.0.1", false},
	{"~0.0.0", "^0.0.9", true},
	{"^1.0.0", "^0.9.0", false},
	{"^2.0.0", "~2.5.1", true},
	{"~2.5.0", "~2.5.1", true},
	{"^10.20.30", "~10.99.0", true},
	{"^10.20.30", "~11.0.0", false},
	{"^0.1.0", "~0.1.7", true},
	{"~0.1.0", "^0.0.5", false},
	{"~0.0.0", "^0.0.0", true},
	{"^0.0.0", "^0.0.0", true},
	{"^0.0.0", "~0.0.0", false},
}

// coversBeyondNPM holds pairs where npm's semver.subset (7.8.6) answers false
// but every version the request admits is admitted by the grant, which is the
// rule of operations.md ("a grant covers a request when every version the
// request admits is admitted by the grant"). npm's subset is deliberately
// conservative here: it refuses any sub-range with bounds against an "="
// range, and treats the lower-bound-less "<0.0.1-0" that ^0.0.0 desugars to
// as possibly reaching below 0.0.0. Brute force with npm's own
// semver.satisfies over a grid of 8000 release versions confirms each request
// admits only versions the grant admits (^0.0.Z admits exactly 0.0.Z).
var coversBeyondNPM = []struct {
	grant, request string
	want           bool
}{
	{"0.0.3", "^0.0.3", true},
	{">=0.0.0", "^0.0.0", true},
	{"0.0.0", "^0.0.0", true},
	{"", "^0.0.0", true},
}

func TestCoversMatchesNPM(t *testing.T) {
	for _, tc := range coversNPM {
		t.Run(tc.grant+"⊇"+tc.request, func(t *testing.T) {
			grant, request := mustRange(t, tc.grant), mustRange(t, tc.request)
			if got := grant.Covers(request); got != tc.want {
				t.Errorf("%q.Covers(%q) = %v, want %v", tc.grant, tc.request, got, tc.want)
			}
		})
	}
}

func TestCoversWhereNPMSubsetIsConservative(t *testing.T) {
	for _, tc := range coversBeyondNPM {
		t.Run(tc.grant+"⊇"+tc.request, func(t *testing.T) {
			grant, request := mustRange(t, tc.grant), mustRange(t, tc.request)
			if got := grant.Covers(request); got != tc.want {
				t.Errorf("%q.Covers(%q) = %v, want %v", tc.grant, tc.request, got, tc.want)
			}
		})
	}
}

// containsNPM holds (range, version, range.Contains(version)); every expected
// value was checked against semver.satisfies from npm semver 7.x (7.8.6).
var containsNPM = []struct {
	rng, version string
	want         bool
}{
	{"^1.2.3", "1.2.3", true},
	{"^1.2.3", "1.2.2", false},
	{"^1.2.3", "1.9.0", true},
	{"^1.2.3", "1.99.99", true},
	{"^1.2.3", "2.0.0", false},
	{"^1.2.3", "0.9.9", false},
	{"^0.2.3", "0.2.3", true},
	{"^0.2.3", "0.2.99", true},
	{"^0.2.3", "0.3.0", false},
	{"^0.2.3", "0.2.2", false},
	{"^0.0.3", "0.0.3", true},
	{"^0.0.3", "0.0.4", false},
	{"^0.0.3", "0.0.2", false},
	{"^0.0.0", "0.0.0", true},
	{"^0.0.0", "0.0.1", false},
	{"~1.2.3", "1.2.3", true},
	{"~1.2.3", "1.2.9", true},
	{"~1.2.3", "1.3.0", false},
	{"~1.2.3", "1.2.2", false},
	{"~0.2.3", "0.2.5", true},
	{"~0.2.3", "0.3.0", false},
	{"~0.0.3", "0.0.9", true},
	{"~0.0.3", "0.1.0", false},
	{">=1.2.3", "1.2.3", true},
	{">=1.2.3", "1.2.2", false},
	{">=1.2.3", "99.0.0", true},
	{">=0.0.0", "0.0.0", true},
	{"1.2.3", "1.2.3", true},
	{"1.2.3", "1.2.4", false},
	{"1.2.3", "1.2.2", false},
	{"", "0.0.0", true},
	{"", "123.456.789", true},
}

func TestContainsMatchesNPM(t *testing.T) {
	for _, tc := range containsNPM {
		t.Run(tc.rng+"∋"+tc.version, func(t *testing.T) {
			r, v := mustRange(t, tc.rng), mustVersion(t, tc.version)
			if got := r.Contains(v); got != tc.want {
				t.Errorf("%q.Contains(%s) = %v, want %v", tc.rng, tc.version, got, tc.want)
			}
			if got := refContains(r, v); got != tc.want {
				t.Errorf("refContains(%q, %s) = %v, want %v", tc.rng, tc.version, got, tc.want)
			}
		})
	}
}

// TestUint64Maximum pins the overflow rule: upper bounds carry into the next
// part (the version after every 1.MAX.* is 2.0.0) and only become unbounded
// past MAX.MAX.MAX, where no version exists. npm cannot express these numbers
// (it refuses anything above 2^53-1), so the expectations follow from the
// operator definitions and are cross-checked by refContains.
func TestUint64Maximum(t *testing.T) {
	m := Version{Major: top, Minor: top, Patch: top}
	contains := []struct {
		rng  string
		v    Version
		want bool
	}{
		{"^18446744073709551615.0.0", Version{top, 0, 0}, true},
		{"^18446744073709551615.0.0", m, true},
		{"^18446744073709551615.0.0", Version{top - 1, top, top}, false},
		{"~1.18446744073709551615.0", Version{1, top, top}, true},
		{"~1.18446744073709551615.0", Version{2, 0, 0}, false}, // wrapping or "unbounded" would admit it
		{"~1.18446744073709551615.0", Version{1, 0, 0}, false},
		{"~18446744073709551615.18446744073709551615.0", m, true},
		{"^0.18446744073709551615.5", Version{0, top, top}, true},
		{"^0.18446744073709551615.5", Version{1, 0, 0}, false},
		{"^0.0.18446744073709551615", Version{0, 0, top}, true},
		{"^0.0.18446744073709551615", Version{0, 1, 0}, false},
		{"1.2.18446744073709551615", Version{1, 2, top}, true},
		{"1.2.18446744073709551615", Version{1, 3, 0}, false},
		{"1.18446744073709551615.18446744073709551615", Version{2, 0, 0}, false},
		{"18446744073709551615.18446744073709551615.18446744073709551615", m, true},
		{"18446744073709551615.18446744073709551615.18446744073709551615", Version{top, top, top - 1}, false},
		{">=18446744073709551615.18446744073709551615.18446744073709551615", m, true},
	}
	for _, tc := range contains {
		r := mustRange(t, tc.rng)
		if got := r.Contains(tc.v); got != tc.want {
			t.Errorf("%q.Contains(%s) = %v, want %v", tc.rng, tc.v, got, tc.want)
		}
		if got := refContains(r, tc.v); got != tc.want {
			t.Errorf("refContains(%q, %s) = %v, want %v", tc.rng, tc.v, got, tc.want)
		}
	}
	covers := []struct {
		grant, request string
		want           bool
	}{
		{">=18446744073709551615.0.0", "^18446744073709551615.0.0", true},
		{"^18446744073709551615.0.0", ">=18446744073709551615.0.0", true}, // same set: nothing lies above MAX.*.*
		{"^18446744073709551615.0.0", ">=18446744073709551614.0.0", false},
		{"^1.0.0", "~1.18446744073709551615.0", true},
		{"~1.18446744073709551615.0", "^1.18446744073709551615.0", true}, // both are 1.MAX.*
		{"~1.18446744073709551615.0", "2.0.0", false},
		{"1.2.18446744073709551615", "~1.2.18446744073709551615", true}, // ~ admits only 1.2.MAX
		{"~1.2.18446744073709551615", "1.2.18446744073709551615", true},
		{"18446744073709551615.18446744073709551615.18446744073709551615", ">=18446744073709551615.18446744073709551615.18446744073709551615", true},
		{"", "^18446744073709551615.0.0", true},
	}
	for _, tc := range covers {
		grant, request := mustRange(t, tc.grant), mustRange(t, tc.request)
		if got := grant.Covers(request); got != tc.want {
			t.Errorf("%q.Covers(%q) = %v, want %v", tc.grant, tc.request, got, tc.want)
		}
	}
	if _, err := ParseRange("^18446744073709551616.0.0"); err == nil {
		t.Error("ParseRange accepted a major part above the uint64 maximum")
	}
}

func TestParseRangeOK(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"^1.2.3", "^1.2.3"},
		{"~1.2.3", "~1.2.3"},
		{">=1.2.3", ">=1.2.3"},
		{"1.2.3", "1.2.3"},
		{"0.0.0", "0.0.0"},
		{"  ^0.10.0\t", "^0.10.0"},
		{"\n>=10.20.30 ", ">=10.20.30"},
		{"^18446744073709551615.18446744073709551615.18446744073709551615", "^18446744073709551615.18446744073709551615.18446744073709551615"},
	}
	for _, tc := range tests {
		r, err := ParseRange(tc.in)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.in, err)
			continue
		}
		if got := r.String(); got != tc.want {
			t.Errorf("ParseRange(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		if r.IsAny() {
			t.Errorf("ParseRange(%q).IsAny() = true", tc.in)
		}
	}
}

func TestAny(t *testing.T) {
	a := Any()
	if a.String() != "" || !a.IsAny() || a != (Range{}) {
		t.Errorf("Any() = %#v with String %q; want the zero Range with String \"\"", a, a.String())
	}
	if !a.Contains(Version{}) || !a.Contains(Version{top, top, top}) {
		t.Error("Any() must contain 0.0.0 and MAX.MAX.MAX")
	}
}

func TestParseRangeErrors(t *testing.T) {
	tests := []struct {
		in, reason string // reason is a fragment the message must hold
	}{
		{"", "is empty"},
		{"   ", "is empty"},
		{"^", `missing version after ^`},
		{"~", `missing version after ~`},
		{">=", `missing version after >=`},
		{"1.2", "has 2 dot-separated parts; want 3"},
		{"^1.2", "has 2 dot-separated parts; want 3"},
		{"1.2.3.4", "has 4 dot-separated parts"},
		{"01.2.3", "major part has a leading zero"},
		{"1.02.3", "minor part has a leading zero"},
		{"^1.2.03", "patch part has a leading zero"},
		{"1.2.3-beta", "prerelease or build suffix"},
		{"1.2.3+build.5", "prerelease or build suffix"},
		{"v1.2.3", `"v" prefix`},
		{"^v1.2.3", `"v" prefix`},
		{">1.2.3", "operator > is not supported"},
		{"<=1.0.0", "operator <= is not supported"},
		{"<1.0.0", "operator < is not supported"},
		{"=1.2.3", "operator = is not supported"},
		{"!=1.2.3", "operator != is not supported"},
		{"^1.2.3 || 2.0.0", "must be a single constraint"},
		{"^1.2.3||2.0.0", "must be a single constraint"},
		{"1.2.3 - 2.0.0", "must be a single constraint"},
		{">=1.0.0 <2.0.0", "must be a single constraint"},
		{">= 1.2.3", "must be a single constraint"},
		{"*", "wildcards are not supported"},
		{"x", "wildcards are not supported"},
		{"^*", "wildcards are not supported"},
		{"1.x.0", "minor part is a wildcard"},
		{"1.2.*", "patch part is a wildcard"},
		{"1..3", "minor part is empty"},
		{"-1.2.3", "major part is not a decimal number"},
		{"~>1.2.3", "major part is not a decimal number"},
		{"^^1.2.3", "major part is not a decimal number"},
		{"１.2.3", "major part is not a decimal number"}, // full-width digit
		{"18446744073709551616.0.0", "major part exceeds 18446744073709551615"},
		{"latest", "has 1 dot-separated part;"},
	}
	for _, tc := range tests {
		_, err := ParseRange(tc.in)
		if err == nil {
			t.Errorf("ParseRange(%q) succeeded; want an error", tc.in)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseRange(%q) error %T is not a *SyntaxError", tc.in, err)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "invalid version range ") || !strings.Contains(msg, tc.reason) {
			t.Errorf("ParseRange(%q) error = %q, want it to contain %q", tc.in, msg, tc.reason)
		}
	}
}

func TestParseVersion(t *testing.T) {
	ok := []string{"0.0.0", "1.2.3", "10.200.3000", "18446744073709551615.18446744073709551615.18446744073709551615"}
	for _, s := range ok {
		v, err := ParseVersion(s)
		if err != nil {
			t.Errorf("ParseVersion(%q): %v", s, err)
			continue
		}
		if v.String() != s {
			t.Errorf("ParseVersion(%q).String() = %q", s, v.String())
		}
	}
	bad := []struct{ in, reason string }{
		{"", "is empty"},
		{" 1.2.3", "major part is not a decimal number"}, // no trimming: versions come from our own records
		{"1.2.3 ", "patch part is not a decimal number"},
		{"^1.2.3", "major part is not a decimal number"},
		{"v1.2.3", `"v" prefix`},
		{"1.2", "want 3"},
		{"1.2.3-rc.1", "prerelease or build suffix"},
		{"00.1.2", "leading zero"},
		{"1.2.18446744073709551616", "patch part exceeds"},
	}
	for _, tc := range bad {
		_, err := ParseVersion(tc.in)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid version ") || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("ParseVersion(%q) error = %v, want one containing %q", tc.in, err, tc.reason)
		}
	}
}

func TestCompare(t *testing.T) {
	order := []Version{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, top}, {1, 0, 0}, {1, 2, 3}, {1, 10, 0}, {top, top, top}}
	for i, a := range order {
		for j, b := range order {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestSyntaxErrorTruncatesInput(t *testing.T) {
	long := "^" + strings.Repeat("9", 10000)
	_, err := ParseRange(long)
	if err == nil {
		t.Fatal("ParseRange accepted a 10000-digit number")
	}
	if n := len(err.Error()); n > 200 {
		t.Errorf("error message is %d bytes; want the input truncated", n)
	}
}

// pred returns the version just below v, borrowing across parts.
func pred(v Version) (Version, bool) {
	switch {
	case v.Patch > 0:
		return Version{v.Major, v.Minor, v.Patch - 1}, true
	case v.Minor > 0:
		return Version{v.Major, v.Minor - 1, top}, true
	case v.Major > 0:
		return Version{v.Major - 1, top, top}, true
	default:
		return Version{}, false
	}
}

// samples returns versions around the interval endpoints of rs, where
// membership changes, plus extra and the two extreme versions.
func samples(extra Version, rs ...Range) []Version {
	out := []Version{extra, {}, {top, top, top}}
	for _, r := range rs {
		lo, hi := r.interval()
		out = append(out, lo)
		if p, ok := pred(lo); ok {
			out = append(out, p)
		}
		if hi.bounded {
			out = append(out, hi.v)
			if p, ok := pred(hi.v); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func FuzzRange(f *testing.F) {
	seeds := []string{
		"^1.2.3", "~1.2.3", ">=1.2.3", "1.2.3", "^0.2.3", "^0.0.3", "~0.2.3", "~0.0.0", "^0.0.0", ">=0.0.0",
		" ^1.0.0 ", "^18446744073709551615.0.0", "~1.18446744073709551615.0", "1.2.18446744073709551615",
		"^0.18446744073709551615.7", "18446744073709551615.18446744073709551615.18446744073709551615",
		"", "^", "1.2", "01.2.3", "1.2.3-beta", "v1.2.3", ">1.2.3", "<=1.0.0", "^1.2.3 || 2.0.0",
		"1.2.3 - 2.0.0", "*", "x", "18446744073709551616.0.0",
	}
	for i, a := range seeds {
		b := seeds[(i*7+3)%len(seeds)]
		f.Add(a, b, uint64(i), uint64(i*3), uint64(top-uint64(i)))
	}
	f.Fuzz(func(t *testing.T, a, b string, major, minor, patch uint64) {
		extra := Version{major, minor, patch}
		ra, errA := ParseRange(a)
		rb, errB := ParseRange(b)
		for _, c := range []struct {
			in  string
			r   Range
			err error
		}{{a, ra, errA}, {b, rb, errB}} {
			if c.err != nil {
				var se *SyntaxError
				if !errors.As(c.err, &se) || se.Reason == "" {
					t.Fatalf("ParseRange(%q) error %#v is not a *SyntaxError with a reason", c.in, c.err)
				}
				continue
			}
			s := c.r.String()
			if s != strings.TrimSpace(c.in) {
				t.Fatalf("ParseRange(%q).String() = %q, want the trimmed input", c.in, s)
			}
			again, err := ParseRange(s)
			if err != nil || again != c.r {
				t.Fatalf("ParseRange(%q) = %v, %v; want %#v again", s, again, err, c.r)
			}
			for _, v := range samples(extra, c.r) {
				if got, want := c.r.Contains(v), refContains(c.r, v); got != want {
					t.Fatalf("%q.Contains(%s) = %v, want %v", s, v, got, want)
				}
			}
		}
		if v, err := ParseVersion(a); err == nil {
			if v.String() != a {
				t.Fatalf("ParseVersion(%q).String() = %q", a, v.String())
			}
			if errA != nil || ra != (Range{op: opExact, v: v}) {
				t.Fatalf("ParseRange(%q) = %#v, %v; want the exact range of the version", a, ra, errA)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		vs := samples(extra, ra, rb)
		if ra.Covers(rb) {
			for _, v := range vs {
				if rb.Contains(v) && !ra.Contains(v) {
					t.Fatalf("%q.Covers(%q) but %s is in the second and not the first", ra, rb, v)
				}
			}
			return
		}
		// Some version of rb lies outside ra; it is rb's low end or, failing
		// that, ra's exclusive upper bound.
		for _, v := range vs {
			if rb.Contains(v) && !ra.Contains(v) {
				return
			}
		}
		t.Fatalf("!%q.Covers(%q) but no sampled version of the second lies outside the first", ra, rb)
	})
}

func BenchmarkParseRange(b *testing.B) {
	for b.Loop() {
		if _, err := ParseRange("^10.20.30"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCovers(b *testing.B) {
	grant, request := mustRange(b, "^1.2.3"), mustRange(b, "~1.4.0")
	for b.Loop() {
		if !grant.Covers(request) {
			b.Fatal("want covers")
		}
	}
}

func BenchmarkContains(b *testing.B) {
	r, v := mustRange(b, "~1.2.3"), Version{1, 2, 9}
	for b.Loop() {
		if !r.Contains(v) {
			b.Fatal("want contains")
		}
	}
}
