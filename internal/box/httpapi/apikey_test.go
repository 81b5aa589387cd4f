package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/openapi/openapitest"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestAPIKeyScopes: an API key reaches box's account routes only within
// the scopes identity reports for it (identity-lifecycle.md §5); outside
// them box answers 403 insufficient_scope and writes nothing.
func TestAPIKeyScopes(t *testing.T) {
	key := func(scopes string) string {
		return `{"id":"` + account + `","name":"Acme","slug":"acme","personal":false,"role":"api_key","scopes":[` + scopes + `],"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	}
	fetch := `{"artifact":"kit"}`
	cases := []struct {
		name, scopes, method, path, body string
		wantStatus                       int
		wantCode                         string
	}{
		{"FetchWithArtifactsFetch", `"artifacts:fetch"`, "POST", "/artifact_fetches", fetch, 201, ""},
		{"ErrFetchWithoutScope", `"releases:read"`, "POST", "/artifact_fetches", fetch, 403, "insufficient_scope"},
		{"EntitlementsWithScope", `"entitlements:read"`, "GET", "/entitlements", "", 200, ""},
		{"HoldingsWithScope", `"entitlements:read"`, "GET", "/holdings", "", 200, ""},
		{"ErrHoldingsWithoutScope", `"releases:read"`, "GET", "/holdings", "", 403, "insufficient_scope"},
		{"ErrEntitlementsWithoutScope", `"artifacts:fetch"`, "GET", "/entitlements", "", 403, "insufficient_scope"},
		{"ReleasesWithScope", `"releases:read"`, "GET", "/releases", "", 200, ""},
		{"ErrTimelineWithoutScope", `"releases:read"`, "GET", "/audit-events", "", 403, "insufficient_scope"},
		{"ActivateWithInstallationsWrite", `"installations:write"`, "POST", "/installations", `{"product":"kit","fingerprint":"ci-1","name":"CI"}`, 201, ""},
		{"ErrActivateWithoutScope", `"artifacts:fetch"`, "POST", "/installations", `{"product":"kit","fingerprint":"ci-2","name":"CI"}`, 403, "insufficient_scope"},
		{"ErrListInstallationsIsNoKeys", `"installations:write"`, "GET", "/installations", "", 403, "insufficient_scope"},
		{"ErrClaimIsNoKeys", `"account:read","entitlements:read","artifacts:fetch","releases:read","releases:approve"`, "POST", "/claims", `{}`, 403, "insufficient_scope"},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "kit", "")
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e.identity.setOverride(answer(200, key(c.scopes)))
				before := e.count(`SELECT count(*) FROM capabilities`)
				res := e.do(c.method, "/v1/accounts/"+account+c.path, "plat_"+"k", c.body)
				if res.status != c.wantStatus || res.errorCode() != c.wantCode {
					t.Fatalf("status %d code %q, want %d %q (%s)", res.status, res.errorCode(), c.wantStatus, c.wantCode, res.raw)
				}
				if after := e.count(`SELECT count(*) FROM capabilities`); c.wantStatus != 201 && after != before {
					t.Errorf("capabilities %d -> %d on a refusal", before, after)
				}
			})
		}
	})
}

// exerciseKeyScopes is the conformance suite's part for API keys: each
// account route refuses a key without its scope.
func exerciseKeyScopes(t *testing.T, c *openapitest.Client, e *env, installationID string) {
	t.Helper()
	defer e.identity.setOverride(nil)
	e.identity.setOverride(answer(200, `{"id":"`+account+`","role":"api_key","scopes":["account:read"]}`))
	key := openapitest.Bearer("plat_k")
	acct := "/v1/accounts/" + account
	for _, rt := range []struct{ method, path, body string }{
		{"GET", acct + "/entitlements", ""},
		{"GET", acct + "/holdings", ""},
		{"POST", acct + "/artifact_fetches", `{"artifact":"kit"}`},
		{"GET", acct + "/releases", ""},
		{"POST", acct + "/approvals", `{"release_id":1}`},
		{"POST", acct + "/claims", `{}`},
		{"POST", acct + "/installations", `{"product":"platform","fingerprint":"k","name":"k"}`},
		{"GET", acct + "/installations", ""},
		{"POST", "/v1/installations/" + installationID + "/heartbeat", `{}`},
		{"DELETE", "/v1/installations/" + installationID, ""},
		{"POST", "/v1/installations/" + installationID + "/license", ""},
	} {
		c.Code(rt.method, rt.path, rt.body, 403, "insufficient_scope", key)
	}
	c.Do("GET", acct+"/audit-events", "", 200, key)
	e.identity.setOverride(answer(200, `{"id":"`+account+`","role":"api_key","scopes":["releases:read"]}`))
	c.Code("GET", acct+"/audit-events", "", 403, "insufficient_scope", key)
}

// TestPublishingKey: a staff key with releases:publish publishes a
// release (box asks identity's GET /v1/operator/publisher, which admits
// it) and nothing else (identity's GET /v1/operator/me refuses every
// key, so every other staff route is 403); a revoked key is 401.
func TestPublishingKey(t *testing.T) {
	const creator = "11111111-1111-4111-8111-111111111111"
	live := func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/operator/publisher":
			answer(200, `{"user_id":"`+creator+`","api_key_id":"22222222-2222-4222-8222-222222222222"}`)(w, r)
		case "/v1/operator/me":
			answer(403, `{"code":"insufficient_scope"}`)(w, r)
		default:
			answer(404, `{"code":"not_found"}`)(w, r)
		}
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.identity.setOverride(live)
		res := e.do("POST", "/v1/operator/releases", "plat_k", `{"product":"platform","version":"3.0.0"}`)
		if res.status != http.StatusCreated || !strings.Contains(res.raw, `"published_by":"`+creator+`"`) {
			t.Fatalf("publish with the key = %d %s, want 201 published by the key's creator", res.status, res.raw)
		}
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/operator/entitlements", `{"account_id":"` + account + `","product":"platform","source":"reconciled_payment","reference":"pi_1"}`},
			{"GET", "/v1/operator/releases", ""},
			{"GET", "/v1/operator/entitlements", ""},
			{"GET", "/v1/operator/installations?account_id=" + account, ""},
		} {
			if res := e.do(c.method, c.path, "plat_k", c.body); res.status != http.StatusForbidden {
				t.Errorf("%s %s with the key = %d %s, want 403", c.method, c.path, res.status, res.raw)
			}
		}
		e.identity.setOverride(answer(401, `{"code":"unauthorized"}`))
		if res := e.do("POST", "/v1/operator/releases", "plat_k", `{"product":"platform","version":"3.0.1"}`); res.status != http.StatusUnauthorized {
			t.Errorf("publish with a revoked key = %d %s, want 401", res.status, res.raw)
		}
		if n := e.count(`SELECT count(*) FROM releases`); n != 1 {
			t.Errorf("%d releases, want the one the live key published", n)
		}
	})
}
