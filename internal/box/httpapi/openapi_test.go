package httpapi_test

// These tests hold box's OpenAPI document to the code: it is valid OpenAPI
// 3.1, it names exactly the routes routes.go registers, and every response
// it declares is produced by the real handlers over a real database (and
// the fake identity of helpers_test.go) and validated against it
// (openapitest.Wrap).

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	if _, err := openapitest.Load(httpapi.OpenAPI()); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIDocumentsEveryRoute: the document's operations and the
// patterns routes.go registers are the same set, so a new route cannot
// ship undocumented, nor a documented one disappear.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckRoutes(t, httpapi.OpenAPI(), src, 23)
}

// TestOpenAPIServed: /openapi.json answers the embedded document, with or
// without a database.
func TestOpenAPIServed(t *testing.T) {
	logger, _ := logtest.New()
	c := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Logger: logger, Ready: noDatabase}), nil)
	res := c.Do("GET", "/openapi.json", "", 200)
	if got := res.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if res.Body.String() != string(httpapi.OpenAPI()) {
		t.Error("GET /openapi.json does not answer the embedded document")
	}
}

func noDatabase(context.Context) httpx.Readiness {
	return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": "none"}}
}

// oaHandler is box over db and the identity at identityURL, with the
// readiness probe boxcmd serves.
func oaHandler(t *testing.T, db *sqldb.DB, identityURL string) http.Handler {
	t.Helper()
	logger, _ := logtest.New()
	client := httpapi.NewIdentity(identityURL, 2*time.Second, logger)
	t.Cleanup(client.Close)
	svc := box.NewService(sqlstore.New(db), client, 0).WithLicensing(testLicensing())
	return httpapi.NewServer(httpapi.Deps{Service: svc, Logger: logger, Idempotency: idempotency.New(db, make([]byte, idempotency.SecretSize)), Ready: func(ctx context.Context) httpx.Readiness {
		if err := db.Ready(ctx); err != nil {
			return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": string(db.Engine)}}
		}
		return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": string(db.Engine)}}
	}})
}

// oaKey sends key as the request's Idempotency-Key.
func oaKey(key string) openapitest.Option { return openapitest.Header(idempotency.Header, key) }

// oaClaimKey records an unfinished Idempotency-Key claim, as a request
// still being processed leaves it, so the next request with the key is
// told so. Box's records are the user's (userID), not the token's.
func oaClaimKey(t *testing.T, db *sqldb.DB, userID, key, method, path, body string) {
	t.Helper()
	if err := idempotency.New(db, make([]byte, idempotency.SecretSize)).Hold(context.Background(), "user:"+userID, key, method, path, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIConformance drives every declared response of every route
// through the validating wrapper, over a real database on each engine,
// and fails on any response the document does not allow or any declared
// response no request produced.
func TestOpenAPIConformance(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		seen := &openapitest.Coverage{}
		c := openapitest.NewClient(t, httpapi.OpenAPI(), oaHandler(t, e.db, e.identity.srv.URL), seen)
		staff, buyer, stranger := openapitest.Bearer(staffToken), openapitest.Bearer(buyerToken), openapitest.Bearer(strangerTok)
		big := `{"account_id":"` + strings.Repeat("a", httpx.MaxBodyBytes) + `"}`
		plain := openapitest.Header("Content-Type", "text/plain")

		// Probes, the document and the fallback.
		c.Do("GET", "/healthz", "", 200)
		c.Do("GET", "/readyz", "", 200)
		c.Do("GET", "/openapi.json", "", 200)
		c.Code("GET", "/v1/nothing", "", 404, "not_found", staff)
		if w := c.Code("PUT", "/v1/operator/entitlements", `{}`, 405, "method_not_allowed", staff); w.Header().Get("Allow") != "GET, HEAD, POST" {
			t.Errorf("405 Allow = %q, want GET, HEAD, POST", w.Header().Values("Allow"))
		}

		// Grants.
		const grants = "/v1/operator/entitlements"
		platform := `{"account_id":"` + account + `","product":"platform","version_range":"^1.0.0","source":"reconciled_payment","reference":"pi_1"}`
		var granted struct{ Entitlement struct{ ID int64 } }
		c.JSON("POST", grants, platform, 201, &granted, staff, oaKey("grant-1"))
		if w := c.Do("POST", grants, platform, 201, staff, oaKey("grant-1")); w.Header().Get("Idempotent-Replayed") != "true" {
			t.Error("grant replay: no Idempotent-Replayed")
		}
		c.Code("POST", grants, `{"account_id":"`+account+`"}`, 422, "idempotency_key_reused", staff, oaKey("grant-1"))
		c.Code("POST", grants, platform, 400, "idempotency_key_invalid", staff, oaKey("has space"))
		oaClaimKey(t, e.db, staffID, "grant-busy", "POST", grants, platform)
		if w := c.Code("POST", grants, platform, 409, "idempotency_key_in_progress", staff, oaKey("grant-busy")); w.Header().Get("Retry-After") != "1" {
			t.Errorf("in progress: Retry-After = %q", w.Header().Get("Retry-After"))
		}
		var dup struct {
			Entitlement struct{ ID int64 }
			Duplicate   bool
		}
		c.JSON("POST", grants, `{"account_id":" `+strings.ToUpper(account)+` ","product":" platform "}`, 409, &dup, staff)
		if !dup.Duplicate || dup.Entitlement.ID != granted.Entitlement.ID {
			t.Errorf("duplicate grant = %+v, want the existing row %d", dup, granted.Entitlement.ID)
		}
		c.Do("POST", grants, `{"account_id":"`+otherAcct+`","product":null,"version_range":"","source":" ","reference":null}`, 201, staff)
		c.Code("POST", grants, `{"account_id":"not-a-uuid","product":"gold"}`, 422, "unprocessable", staff)
		c.Code("POST", grants, `{"account_id":"`+account+`","admin":true}`, 400, "malformed_json", staff)
		c.Code("POST", grants, `{"account_id":"`+account+`"}`, 415, "unsupported_media_type", staff, plain)
		c.Code("POST", grants, big, 413, "body_too_large", staff)
		c.Code("POST", grants, platform, 403, "forbidden", buyer)
		c.Code("POST", grants, platform, 401, "unauthenticated")

		// The operator list.
		var page struct {
			Entitlements []json.RawMessage
			NextCursor   *string `json:"next_cursor"`
		}
		c.JSON("GET", grants+"?limit=1", "", 200, &page, staff)
		if page.NextCursor == nil {
			t.Fatal("entitlements?limit=1 of two: no next_cursor")
		}
		c.Do("GET", grants+"?limit=1&cursor="+*page.NextCursor, "", 200, staff)
		c.Do("GET", grants+"?account_id="+account+"&product=platform&status=active&limit=200", "", 200, staff)
		c.Do("GET", grants+"?account_id=&product=&status=&cursor=&limit=", "", 200, staff)
		c.Code("GET", grants+"?limit=0", "", 422, "unprocessable", staff)
		c.Code("GET", grants+"?status=expired", "", 422, "unprocessable", staff)
		c.Code("GET", grants, "", 403, "forbidden", buyer)
		c.Code("GET", grants, "", 401, "unauthenticated")

		// Releases.
		const releases = "/v1/operator/releases"
		var rel struct{ Release struct{ ID int64 } }
		c.JSON("POST", releases, `{"product":"platform","version":"1.2.0","notes":"first\nline"}`, 201, &rel, staff, oaKey("rel-1"))
		c.Do("POST", releases, `{"product":"platform","version":"1.2.0","notes":"first\nline"}`, 201, staff, oaKey("rel-1"))
		c.Code("POST", releases, `{"product":"platform","version":"1.3.0"}`, 422, "idempotency_key_reused", staff, oaKey("rel-1"))
		c.Code("POST", releases, `{"product":"platform","version":"1.3.0"}`, 400, "idempotency_key_invalid", staff, oaKey(strings.Repeat("k", 256)))
		oaClaimKey(t, e.db, staffID, "rel-busy", "POST", releases, `{"product":"platform","version":"1.4.0"}`)
		c.Code("POST", releases, `{"product":"platform","version":"1.4.0"}`, 409, "idempotency_key_in_progress", staff, oaKey("rel-busy"))
		c.Code("POST", releases, `{"product":"platform","version":"1.2.0"}`, 409, "conflict", staff)
		var rel2, relCourier struct{ Release struct{ ID int64 } }
		c.JSON("POST", releases, `{"product":" platform","version":"2.0.0","notes":null}`, 201, &rel2, staff)
		c.JSON("POST", releases, `{"product":"courier","version":"1.0.0"}`, 201, &relCourier, staff)
		c.Code("POST", releases, `{"product":"platform","version":"v1.0"}`, 422, "unprocessable", staff)
		c.Code("POST", releases, `{"product":"platform","version":1}`, 400, "malformed_json", staff)
		c.Code("POST", releases, `{"product":"platform","version":"1.0.0"}`, 415, "unsupported_media_type", staff, plain)
		c.Code("POST", releases, big, 413, "body_too_large", staff)
		c.Code("POST", releases, `{"product":"platform","version":"1.0.0"}`, 403, "forbidden", buyer)
		c.Code("POST", releases, `{"product":"platform","version":"1.0.0"}`, 401, "unauthenticated")
		var relPage struct {
			NextCursor *string `json:"next_cursor"`
		}
		c.JSON("GET", releases+"?limit=1", "", 200, &relPage, staff)
		if relPage.NextCursor == nil {
			t.Fatal("releases?limit=1 of three: no next_cursor")
		}
		c.Do("GET", releases+"?product=platform&cursor="+*relPage.NextCursor, "", 200, staff)
		c.Code("GET", releases+"?cursor=bm90LWEtY3Vyc29y", "", 422, "unprocessable", staff)
		c.Code("GET", releases, "", 403, "forbidden", buyer)
		c.Code("GET", releases, "", 401, "unauthenticated")

		// Claims.
		acct := "/v1/accounts/" + account
		var claimed struct {
			Claim struct {
				EntitlementID int64 `json:"entitlement_id"`
			} `json:"claim"`
		}
		c.JSON("POST", acct+"/claims", "", 201, &claimed, buyer, oaKey("claim-1"))
		c.Do("POST", acct+"/claims", "", 201, buyer, oaKey("claim-1"))
		c.Code("POST", acct+"/claims", `{}`, 422, "idempotency_key_reused", buyer, oaKey("claim-1"))
		c.Code("POST", acct+"/claims", "", 400, "idempotency_key_invalid", buyer, oaKey("\x7f"))
		c.Code("POST", acct+"/claims", big, 413, "body_too_large", buyer, oaKey("claim-big"))
		oaClaimKey(t, e.db, buyerID, "claim-busy", "POST", acct+"/claims", "")
		c.Code("POST", acct+"/claims", "", 409, "idempotency_key_in_progress", buyer, oaKey("claim-busy"))
		if w := c.Do("POST", acct+"/claims", "", 200, buyer); !strings.Contains(w.Body.String(), `"claim":null`) {
			t.Errorf("repeated claim: %s, want claim null", w.Body)
		}
		c.Code("POST", acct+"/claims", "", 404, "not_found", stranger)
		c.Code("POST", acct+"/claims", "", 401, "unauthenticated")

		// Customer reads.
		for _, p := range []string{"/entitlements", "/holdings", "/releases", "/audit-events"} {
			c.Do("GET", acct+p, "", 200, buyer)
			c.Code("GET", acct+p, "", 404, "not_found", stranger)
			c.Code("GET", "/v1/accounts/not-a-uuid"+p, "", 404, "not_found", buyer)
			c.Code("GET", acct+p, "", 401, "unauthenticated")
		}

		// Artifact checks and capabilities.
		fetches := acct + "/artifact_fetches"
		var capability struct{ Capability struct{ Token string } }
		c.JSON("POST", fetches, `{"artifact":"platform","version_range":"^1.2.0"}`, 201, &capability, buyer, oaKey("fetch-1"))
		if w := c.Do("POST", fetches, `{"artifact":"platform","version_range":"^1.2.0"}`, 201, buyer, oaKey("fetch-1")); w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("replayed capability: Cache-Control = %q", w.Header().Get("Cache-Control"))
		}
		c.Code("POST", fetches, `{"artifact":"platform"}`, 422, "idempotency_key_reused", buyer, oaKey("fetch-1"))
		c.Code("POST", fetches, `{"artifact":"platform"}`, 400, "idempotency_key_invalid", buyer, oaKey("a b"))
		oaClaimKey(t, e.db, buyerID, "fetch-busy", "POST", fetches, `{"artifact":"kit"}`)
		c.Code("POST", fetches, `{"artifact":"kit"}`, 409, "idempotency_key_in_progress", buyer, oaKey("fetch-busy"))
		var kitCapability struct{ Capability struct{ Token string } }
		c.JSON("POST", fetches, `{"artifact":" kit ","version_range":null}`, 201, &kitCapability, buyer)
		c.Code("POST", fetches, `{"artifact":"courier"}`, 403, "entitlement_required", buyer)
		c.Code("POST", fetches, `{"artifact":"platform","version_range":">=1.0.0"}`, 403, "version_not_granted", buyer)
		c.Code("POST", fetches, `{"artifact":"gold","version_range":"1.x"}`, 422, "unprocessable", buyer)
		c.Code("POST", fetches, `{"artifact":["platform"]}`, 400, "malformed_json", buyer)
		c.Code("POST", fetches, `{"artifact":"platform"}`, 415, "unsupported_media_type", buyer, plain)
		c.Code("POST", fetches, big, 413, "body_too_large", buyer)
		c.Code("POST", fetches, `{"artifact":"platform"}`, 404, "not_found", stranger)
		c.Code("POST", fetches, `{"artifact":"platform"}`, 401, "unauthenticated")

		const redeem = "/v1/capabilities/redeem"
		c.Do("POST", redeem, `{"token":"`+capability.Capability.Token+`"}`, 200)
		c.Code("POST", redeem, `{"token":"`+capability.Capability.Token+`"}`, 410, "capability_used")
		c.Code("POST", redeem, `{"token":"boxcap_unknown"}`, 404, "not_found")
		c.Code("POST", redeem, `{"token":"  "}`, 422, "unprocessable")
		c.Code("POST", redeem, `{"token":"x"} {}`, 400, "malformed_json")
		c.Code("POST", redeem, `{"token":"x"}`, 415, "unsupported_media_type", plain)
		c.Code("POST", redeem, big, 413, "body_too_large")

		// Approvals.
		approvals := acct + "/approvals"
		approve := func(id int64) string { return `{"release_id":` + strconv.FormatInt(id, 10) + `}` }
		c.Do("POST", approvals, approve(rel.Release.ID), 201, buyer, oaKey("approve-1"))
		c.Do("POST", approvals, approve(rel.Release.ID), 201, buyer, oaKey("approve-1"))
		c.Code("POST", approvals, approve(rel2.Release.ID), 422, "idempotency_key_reused", buyer, oaKey("approve-1"))
		c.Code("POST", approvals, approve(rel.Release.ID), 400, "idempotency_key_invalid", buyer, oaKey("é"))
		oaClaimKey(t, e.db, buyerID, "approve-busy", "POST", approvals, approve(rel.Release.ID))
		c.Code("POST", approvals, approve(rel.Release.ID), 409, "idempotency_key_in_progress", buyer, oaKey("approve-busy"))
		c.Do("POST", approvals, approve(rel.Release.ID), 200, buyer)
		c.Code("POST", approvals, approve(rel2.Release.ID), 403, "version_not_granted", buyer)
		c.Code("POST", approvals, approve(relCourier.Release.ID), 403, "entitlement_required", buyer)
		c.Code("POST", approvals, approve(987654), 422, "unprocessable", buyer)
		c.Code("POST", approvals, `{"release_id":"1"}`, 400, "malformed_json", buyer)
		c.Code("POST", approvals, approve(rel.Release.ID), 415, "unsupported_media_type", buyer, plain)
		c.Code("POST", approvals, big, 413, "body_too_large", buyer)
		c.Code("POST", approvals, approve(rel.Release.ID), 404, "not_found", stranger)
		c.Code("POST", approvals, approve(rel.Release.ID), 401, "unauthenticated")
		c.Do("GET", acct+"/audit-events", "", 200, buyer)
		c.Code("GET", acct+"/audit-events?cursor=bm90LW91cnM", "", 422, "unprocessable", buyer)

		// Installations and licences.
		installationID := exerciseInstallations(t, c, e)

		// Revocations; a capability of a revoked entitlement is expired.
		revoke := func(id int64) string { return grants + "/" + strconv.FormatInt(id, 10) + "/revoke" }
		c.Do("POST", revoke(claimed.Claim.EntitlementID), "", 200, staff)
		c.Do("POST", revoke(claimed.Claim.EntitlementID), "", 200, staff)
		c.Code("POST", redeem, `{"token":"`+kitCapability.Capability.Token+`"}`, 410, "capability_expired")
		c.Code("POST", revoke(987654), "", 404, "not_found", staff)
		c.Code("POST", grants+"/abc/revoke", "", 404, "not_found", staff)
		c.Code("POST", revoke(granted.Entitlement.ID), "", 403, "forbidden", buyer)
		c.Code("POST", revoke(granted.Entitlement.ID), "", 401, "unauthenticated")
		c.Do("GET", grants+"?status=revoked", "", 200, staff)

		// The audit trail: the revoke just made is its newest row, a page
		// of one has a next cursor, and only staff read it.
		var trail struct {
			Events []struct {
				Action        string `json:"action"`
				EntitlementID int64  `json:"entitlement_id"`
				Product       string `json:"product"`
			} `json:"events"`
			NextCursor *string `json:"next_cursor"`
		}
		c.JSON("GET", "/v1/operator/audit-events?limit=1", "", 200, &trail, staff)
		if len(trail.Events) != 1 || trail.Events[0].Action != "revoke" || trail.Events[0].EntitlementID != claimed.Claim.EntitlementID ||
			trail.Events[0].Product != "kit" || trail.NextCursor == nil {
			t.Errorf("the trail's newest row: %+v", trail)
		}
		c.JSON("GET", "/v1/operator/audit-events?cursor="+*trail.NextCursor, "", 200, &trail, staff)
		if len(trail.Events) == 0 || trail.Events[0].Action != "grant" {
			t.Errorf("the trail's older page: %+v", trail)
		}
		c.Code("GET", "/v1/operator/audit-events", "", 403, "forbidden", buyer)
		c.Code("GET", "/v1/operator/audit-events", "", 401, "unauthenticated")
		c.Code("GET", "/v1/operator/audit-events?cursor=bm90LW91cnM", "", 422, "unprocessable", staff)

		// Identity unavailable (here: no BOX_IDENTITY_URL): every call that
		// needs it is 503 and does nothing.
		noIdentity := openapitest.NewClient(t, httpapi.OpenAPI(), oaHandler(t, e.db, ""), seen)
		for _, rt := range oaRoutes(granted.Entitlement.ID, installationID) {
			if rt.token == "" {
				continue
			}
			w := noIdentity.Code(rt.method, rt.path, rt.body, 503, "unavailable", openapitest.Bearer(rt.token))
			if w.Header().Get("Retry-After") != "" {
				t.Errorf("%s %s: identity outage answered with Retry-After", rt.method, rt.path)
			}
		}

		// Box's own database unreachable: 503 with Retry-After.
		pool, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/unreachable?sslmode=disable&connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pool.Close() })
		unreachable := &sqldb.DB{DB: pool, Engine: sqldb.Postgres, Now: time.Now}
		down := openapitest.NewClient(t, httpapi.OpenAPI(), oaHandler(t, unreachable, e.identity.srv.URL), seen)
		for _, rt := range oaRoutes(granted.Entitlement.ID, installationID) {
			opts := []openapitest.Option{}
			if rt.token != "" {
				opts = append(opts, openapitest.Bearer(rt.token))
			}
			w := down.Code(rt.method, rt.path, rt.body, 503, "unavailable", opts...)
			if w.Header().Get("Retry-After") != "1" {
				t.Errorf("%s %s: database outage: Retry-After = %q, want 1", rt.method, rt.path, w.Header().Get("Retry-After"))
			}
		}

		// Without a database every /v1 route is 404.
		logger, _ := logtest.New()
		nodb := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Logger: logger, Ready: noDatabase}), seen)
		for _, rt := range oaRoutes(granted.Entitlement.ID, installationID) {
			nodb.Code(rt.method, rt.path, rt.body, 404, "not_found", openapitest.Bearer(staffToken))
		}
		nodb.Code("GET", "/v1/license/keys", "", 404, "not_found")
		waiting := openapitest.NewClient(t, httpapi.OpenAPI(), httpapi.NewServer(httpapi.Deps{Logger: logger, Waiting: true, Ready: noDatabase}), seen)
		waiting.Code("GET", "/v1/license/keys", "", 503, "unavailable")
		nodb.Do("GET", "/readyz", "", 200)
		nodb.Do("GET", "/openapi.json", "", 200)

		// With the database closed every /v1 route is a generic 500 and
		// readiness is 503.
		exerciseKeyScopes(t, c, e, installationID)
		if err := e.db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, rt := range oaRoutes(granted.Entitlement.ID, installationID) {
			opts := []openapitest.Option{}
			if rt.token != "" {
				opts = append(opts, openapitest.Bearer(rt.token))
			}
			c.Code(rt.method, rt.path, rt.body, 500, "internal", opts...)
		}
		c.Do("GET", "/readyz", "", 503)

		c.CheckCoverage()
	})
}

type oaRoute struct{ method, path, token, body string }

// oaRoutes is one valid request per /v1 route, with the token of a caller
// it admits ("" for none).
func oaRoutes(entitlementID int64, installationID string) []oaRoute {
	acct := "/v1/accounts/" + account
	return []oaRoute{
		{"GET", "/v1/operator/entitlements", staffToken, ""},
		{"POST", "/v1/operator/entitlements", staffToken, `{"account_id":"` + account + `","product":"courier"}`},
		{"POST", "/v1/operator/entitlements/" + strconv.FormatInt(entitlementID, 10) + "/revoke", staffToken, ""},
		{"GET", "/v1/operator/releases", staffToken, ""},
		{"GET", "/v1/operator/audit-events", staffToken, ""},
		{"POST", "/v1/operator/releases", staffToken, `{"product":"courier","version":"3.0.0"}`},
		{"GET", acct + "/entitlements", buyerToken, ""},
		{"GET", acct + "/holdings", buyerToken, ""},
		{"POST", acct + "/artifact_fetches", buyerToken, `{"artifact":"platform"}`},
		{"GET", acct + "/releases", buyerToken, ""},
		{"POST", acct + "/approvals", buyerToken, `{"release_id":1}`},
		{"POST", acct + "/claims", buyerToken, ""},
		{"GET", acct + "/audit-events", buyerToken, ""},
		{"POST", "/v1/capabilities/redeem", "", `{"token":"boxcap_` + strings.Repeat("A", 64) + `"}`},
		{"POST", acct + "/installations", buyerToken, `{"product":"platform","fingerprint":"fp-routes","name":"n"}`},
		{"GET", acct + "/installations", buyerToken, ""},
		{"POST", "/v1/installations/" + installationID + "/heartbeat", buyerToken, `{}`},
		{"DELETE", "/v1/installations/" + installationID, buyerToken, ""},
		{"POST", "/v1/installations/" + installationID + "/license", buyerToken, ""},
		{"GET", "/v1/operator/installations", staffToken, ""},
	}
}

// TestOpenAPIWrapperCatchesDrift: handlers that answer something the
// document does not declare make the wrapper fail the test, naming the
// problem.
func TestOpenAPIWrapperCatchesDrift(t *testing.T) {
	row := `{"id":7,"account_id":"` + account + `","product":"platform","status":"active","version_range":"^1.0.0","source":"reconciled_payment","reference":"pi_1","granted_by":"` + staffID + `","revoked_by":null,"granted_at":"2026-01-02T03:04:05Z","revoked_at":null,"max_installations":null}`
	list := `{"entitlements":[` + row + `],"next_cursor":null}`
	kit := `{"account_id":"` + account + `","product":"kit","status":"active","source":"claim","reference":null,"granted_at":"2026-01-02T03:04:05Z","revoked_at":null}`
	grants := "GET /v1/operator/entitlements"
	for _, tc := range []struct {
		name    string
		request string // "METHOD path"
		status  int
		header  map[string]string
		body    string
		want    string
	}{
		{"ExtraField", grants, 200, nil, strings.Replace(list, `"revoked_at":null`, `"revoked_at":null,"expires_at":null`, 1), "expires_at"},
		{"MissingField", grants, 200, nil, strings.Replace(list, `"revoked_by":null,`, "", 1), "revoked_by"},
		{"WrongType", grants, 200, nil, strings.Replace(list, `"id":7`, `"id":"7"`, 1), "id"},
		{"UnknownProduct", grants, 200, nil, strings.Replace(list, `"platform"`, `"gold"`, 1), "product"},
		{"ActiveRowRevokedAt", grants, 200, nil, strings.Replace(list, `"revoked_at":null`, `"revoked_at":"2026-01-03T00:00:00Z"`, 1), "revoked_at"},
		{"CustomerViewLeaksID", "GET /v1/accounts/" + account + "/entitlements", 200, nil, `{"entitlements":[` + strings.Replace(kit, `{`, `{"id":7,`, 1) + `]}`, "id"},
		{"CustomerViewShowsPaidUnit", "GET /v1/accounts/" + account + "/entitlements", 200, nil, `{"entitlements":[` + strings.Replace(kit, `"kit"`, `"platform"`, 1) + `]}`, "product"},
		{"DuplicateNotMarked", "POST /v1/operator/entitlements", 409, nil, `{"entitlement":` + row + `,"duplicate":false}`, "duplicate"},
		{"UndeclaredStatus", grants, 418, nil, `{}`, "418"},
		{"UndeclaredErrorCode", grants, 403, map[string]string{"Cache-Control": "no-store"}, `{"error":{"code":"entitlement_required","message":"platform staff only"}}`, "code"},
		{"ProblemJSONInsteadOfEnvelope", grants, 401, map[string]string{"Cache-Control": "no-store"}, `{"type":"about:blank","status":401,"title":"Unauthorized","detail":"x","code":"unauthenticated"}`, "missing property 'error'"},
		{"ErrorWithoutNoStore", grants, 401, map[string]string{"Cache-Control": ""}, `{"error":{"code":"unauthenticated","message":"valid bearer token required"}}`, "Cache-Control"},
		{"CapabilityWithoutNoStore", "POST /v1/accounts/" + account + "/artifact_fetches", 201, nil,
			`{"capability":{"token":"boxcap_` + strings.Repeat("A", 64) + `","account_id":"` + account + `","artifact":"kit","version_range":null,"expires_at":"2026-01-02T03:04:05Z"}}`, "Cache-Control"},
		{"UndeclaredContentType", grants, 200, map[string]string{"Content-Type": "text/plain"}, "hello", "text/plain"},
		{"UnmatchedStatus", "GET /nope", 418, nil, `{}`, "x-unmatched-responses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for k, v := range tc.header {
					if v == "" {
						w.Header().Del(k)
					} else {
						w.Header().Set(k, v)
					}
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			method, path, _ := strings.Cut(tc.request, " ")
			var body io.Reader
			if method == "POST" {
				body = strings.NewReader(`{"artifact":"kit"}`)
				if strings.HasSuffix(path, "/entitlements") {
					body = strings.NewReader(`{"account_id":"` + account + `"}`)
				}
			}
			r := httptest.NewRequest(method, path, body)
			r.Header.Set("Authorization", "Bearer "+staffToken)
			openapitest.ExpectReport(t, httpapi.OpenAPI(), bad, r, tc.want)
		})
	}

	t.Run("AcceptedInvalidRequest", func(t *testing.T) {
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"entitlement":`+row+`}`)
		})
		for name, body := range map[string]string{
			"UndeclaredField": `{"account_id":"` + account + `","product":"platform","granted_by":"someone"}`,
			"UnknownProduct":  `{"account_id":"` + account + `","product":"gold"}`,
			"MissingAccount":  `{"product":"platform"}`,
		} {
			t.Run(name, func(t *testing.T) {
				r := httptest.NewRequest("POST", "/v1/operator/entitlements", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer "+staffToken)
				openapitest.ExpectReport(t, httpapi.OpenAPI(), ok, r, "accepted a request the document refuses")
			})
		}
	})

	t.Run("ConformingHandlerPasses", func(t *testing.T) {
		good := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, list)
		})
		r := httptest.NewRequest("GET", "/v1/operator/entitlements", nil)
		r.Header.Set("Authorization", "Bearer "+staffToken)
		openapitest.ExpectReport(t, httpapi.OpenAPI(), good, r, "")
	})
}
