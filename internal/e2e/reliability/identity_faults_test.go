//go:build e2e

package reliability

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/testutil"
)

// TestBoxFailsClosedWhenIdentityFails: with identity stopped, slower than
// BOX_IDENTITY_TIMEOUT, or answering garbage, every staff and customer call
// of box answers what entitlements.md section 5 and operations.md section 4
// say (503, or 401/403/404 for the statuses they map), writes no row, and
// box serves again by itself once identity behaves.
func TestBoxFailsClosedWhenIdentityFails(t *testing.T) {
	s := newStack(t, startPostgres(t), stackOptions{})
	op := s.staff(t, "operator@example.com")
	buyer := s.register(t, "buyer@example.com")
	acct := s.team(t, buyer, "Buyer Team")

	// The state every call acts on, made while identity is healthy.
	granted := s.boxAs(op).Do(t, "POST", "/v1/operator/entitlements",
		map[string]any{"account_id": acct, "product": "platform", "version_range": "^1.0.0"}).Expect(t, http.StatusCreated).JSON(t)
	entID := jsonID(granted["entitlement"].(map[string]any)["id"])
	release := s.boxAs(op).Do(t, "POST", "/v1/operator/releases", map[string]any{"product": "platform", "version": "1.2.0"}).
		Expect(t, http.StatusCreated).JSON(t)["release"].(map[string]any)["id"]

	type call struct {
		name, method, path string
		body               any
		staff              bool
	}
	calls := []call{
		{"grant", "POST", "/v1/operator/entitlements", map[string]any{"account_id": acct, "product": "identity"}, true},
		{"revoke", "POST", "/v1/operator/entitlements/" + entID + "/revoke", nil, true},
		{"operator list", "GET", "/v1/operator/entitlements?account_id=" + acct, nil, true},
		{"publish release", "POST", "/v1/operator/releases", map[string]any{"product": "platform", "version": "1.3.0"}, true},
		{"customer read", "GET", "/v1/accounts/" + acct + "/entitlements", nil, false},
		{"artifact check", "POST", "/v1/accounts/" + acct + "/artifact_fetches", map[string]any{"artifact": "platform", "version_range": "^1.0.0"}, false},
		{"claim", "POST", "/v1/accounts/" + acct + "/claims", nil, false},
		{"approval", "POST", "/v1/accounts/" + acct + "/approvals", map[string]any{"release_id": release}, false},
		{"account releases", "GET", "/v1/accounts/" + acct + "/releases", nil, false},
		{"audit timeline", "GET", "/v1/accounts/" + acct + "/audit-events", nil, false},
	}

	faults := []struct {
		name                string
		mode                faultMode
		staffWant, custWant int
	}{
		{"slow beyond BOX_IDENTITY_TIMEOUT", faultMode{delay: 3 * time.Second}, 503, 503},
		{"connection dropped", faultMode{drop: true}, 503, 503},
		{"200 with HTML", faultMode{status: 200, body: "<html>maintenance</html>"}, 503, 503},
		{"200 with trailing garbage", faultMode{status: 200, body: `{"user":{"id":"x","staff":true}} {}`}, 503, 503},
		{"200 without a user id", faultMode{status: 200, body: `{"user":{"id":"","staff":true},"id":"","role":""}`}, 503, 503},
		{"200 with the wrong account", faultMode{status: 200, body: `{"user":{"id":"","staff":true},"id":"00000000-0000-4000-8000-000000000000","role":"owner"}`}, 503, 503},
		{"500", faultMode{status: 500, body: `{}`}, 503, 503},
		{"502", faultMode{status: 502, body: `bad gateway`}, 503, 503},
		{"redirect", faultMode{status: 302, body: ``}, 503, 503},
		{"401", faultMode{status: 401, body: `{}`}, 401, 401},
		{"403", faultMode{status: 403, body: `{}`}, 403, 503},
		{"404", faultMode{status: 404, body: `{}`}, 403, 404},
	}
	check := func(t *testing.T, staffWant, custWant int) {
		t.Helper()
		before := s.boxRows(t)
		// The calls run at once: under a slow identity each waits out the
		// timeout.
		results := make([]e2e.Response, len(calls))
		var wg sync.WaitGroup
		for i, c := range calls {
			u := buyer
			if c.staff {
				u = op
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.boxAs(u).Do(t, c.method, c.path, c.body)
			}()
		}
		wg.Wait()
		for i, c := range calls {
			want := custWant
			if c.staff {
				want = staffWant
			}
			r := results[i]
			if r.Status != want {
				t.Errorf("%s: status %d, want %d; body %s", c.name, r.Status, want, r.Body)
			}
			if want == 503 && r.ErrorCode() != "unavailable" {
				t.Errorf("%s: code %q, want unavailable", c.name, r.ErrorCode())
			}
		}
		if after := s.boxRows(t); after != before {
			t.Errorf("box wrote %d rows while identity failed", after-before)
		}
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			s.proxy.set(f.mode)
			defer s.proxy.set(faultMode{})
			check(t, f.staffWant, f.custWant)
		})
	}

	top := t
	t.Run("identity stopped, then back", func(t *testing.T) {
		s.identity.Stop(t)
		check(t, 503, 503)
		if got := healthz(s.box.URL); got != 200 {
			t.Errorf("box /healthz = %d while identity is down, want 200", got)
		}
		s.restartIdentity(top) // it outlives the subtest
		// No box restart: the next calls succeed.
		testutil.Eventually(t, 10*time.Second, "box to serve again", func() bool {
			return s.boxAs(buyer).Do(t, "GET", "/v1/accounts/"+acct+"/entitlements", nil).Status == 200
		})
	})

	// Everything works again, and only now is anything written.
	before := s.boxRows(t)
	defer func() {
		if t.Failed() {
			t.Logf("box logs:\n%s", s.box.Logs())
		}
	}()
	s.boxAs(op).Do(t, "POST", "/v1/operator/entitlements", map[string]any{"account_id": acct, "product": "identity"}).Expect(t, http.StatusCreated)
	s.boxAs(buyer).Do(t, "POST", "/v1/accounts/"+acct+"/artifact_fetches", map[string]any{"artifact": "platform", "version_range": "^1.0.0"}).Expect(t, http.StatusCreated)
	if after := s.boxRows(t); after != before+3 {
		t.Errorf("after recovery: %d rows written, want 3 (entitlement, its event, a capability)", after-before)
	}
}

func jsonID(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatInt(int64(x), 10)
	case string:
		return x
	}
	return ""
}
