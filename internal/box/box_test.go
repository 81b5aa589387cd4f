package box

import (
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/semver"
)

func TestAuthorize(t *testing.T) {
	active := func(product, rng string) *Entitlement {
		e := &Entitlement{Product: product, Status: StatusActive}
		if rng != "" {
			e.VersionRange = &rng
		}
		return e
	}
	revoked := active("platform", "")
	revoked.Status = StatusRevoked
	cases := []struct {
		name      string
		ent       *Entitlement
		requested string // "" is every version
		want      string
	}{
		{"no entitlement", nil, "^1.0.0", CodeEntitlementRequired},
		{"revoked", revoked, "^1.0.0", CodeEntitlementRequired},
		{"other product", active("courier", ""), "^1.0.0", CodeEntitlementRequired},
		{"null grant covers everything", active("platform", ""), "", ""},
		{"null grant covers a range", active("platform", ""), ">=3.0.0", ""},
		{"caret covers tilde inside", active("platform", "^1.2.0"), "~1.4.2", ""},
		{"caret covers exact", active("platform", "^1.2.0"), "1.9.9", ""},
		{"caret misses next major", active("platform", "^1.2.0"), "^2.0.0", CodeVersionNotGranted},
		{"caret misses lower minor", active("platform", "^1.2.0"), "^1.1.0", CodeVersionNotGranted},
		{"range does not cover every version", active("platform", "^1.2.0"), "", CodeVersionNotGranted},
		{"0.x caret is the minor", active("platform", "^0.2.0"), "0.3.0", CodeVersionNotGranted},
		{">= covers caret above", active("platform", ">=1.0.0"), "^4.1.0", ""},
		{"exact covers itself only", active("platform", "1.0.0"), "~1.0.0", CodeVersionNotGranted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := semver.Any()
			if c.requested != "" {
				var err error
				if req, err = semver.ParseRange(c.requested); err != nil {
					t.Fatal(err)
				}
			}
			err := Authorize("platform", req, c.ent)
			if got := errs.Code(err); got != c.want || (c.want == "" && err != nil) {
				t.Errorf("Authorize = %v, want code %q", err, c.want)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	var p problems
	if got := p.cursor(encodeCursor(12345)); got != 12345 || p.err() != nil {
		t.Errorf("cursor round trip = %d, %v", got, p.err())
	}
	for _, bad := range []string{"12345", "aWQ6", "aWQ6LTE", "!!"} {
		var p problems
		p.cursor(bad)
		if errs.Code(p.err()) != CodeUnprocessable {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

func TestParseID(t *testing.T) {
	for s, want := range map[string]bool{"1": true, "9223372036854775807": true, "9223372036854775808": false,
		"0": false, "-1": false, "+1": false, "1a": false, "": false, " 1": false} {
		if _, ok := parseID(s); ok != want {
			t.Errorf("parseID(%q) ok = %v, want %v", s, ok, want)
		}
	}
}

func TestAuthorizeFailsClosedOnDamagedRange(t *testing.T) {
	bad := "^1.x"
	err := Authorize("platform", semver.Any(), &Entitlement{Product: "platform", Status: StatusActive, VersionRange: &bad})
	if err == nil || errs.Code(err) != "" {
		t.Errorf("Authorize with a damaged range = %v, want an internal error", err)
	}
}
