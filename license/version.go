package license

import (
	"fmt"
	"strconv"
	"strings"
)

// version is X.Y.Z.
type version [3]uint64

func parseVersion(s string) (version, bool) {
	var v version
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return v, false
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func (v version) less(w version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// admits reports whether the range (^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z,
// with npm's meaning of ^ and ~ for 0.x versions) admits the version.
func admits(rng, ver string) (bool, error) {
	v, ok := parseVersion(strings.TrimSpace(ver))
	if !ok {
		return false, fmt.Errorf("%w: %q is not a version X.Y.Z", ErrVersion, ver)
	}
	op := ""
	for _, p := range []string{"^", "~", ">="} {
		if rest, found := strings.CutPrefix(rng, p); found {
			op, rng = p, rest
			break
		}
	}
	lo, ok := parseVersion(rng)
	if !ok {
		return false, fmt.Errorf("%w: the licence's range %q is unreadable", ErrMalformed, rng)
	}
	if v.less(lo) {
		return false, nil
	}
	switch op {
	case "":
		return v == lo, nil
	case ">=":
		return true, nil
	case "~":
		return v[0] == lo[0] && v[1] == lo[1], nil
	default: // ^: the left-most non-zero part is fixed
		switch {
		case lo[0] != 0:
			return v[0] == lo[0], nil
		case lo[1] != 0:
			return v[0] == 0 && v[1] == lo[1], nil
		default:
			return v == lo, nil
		}
	}
}
