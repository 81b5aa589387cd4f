package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func ptr[T any](v T) *T { return &v }

// TestStaffCheck walks the table of entitlements.md section 5 row by row,
// plus every way identity can fail, against a grant: each refusal writes
// nothing, says nothing about why identity failed, and logs the class.
func TestStaffCheck(t *testing.T) {
	grantBody := `{"account_id":"` + account + `","product":"platform","source":"reconciled_payment","reference":"pi_1"}`
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	cases := []struct {
		name       string
		identity   http.HandlerFunc // nil: the fake's directory
		opts       envOptions
		token      string
		wantStatus int
		wantCode   string
		wantClass  string // failure class logged for a 503
		noCall     bool   // identity must not be asked
	}{
		{name: "200 staff with id", token: staffToken, wantStatus: 201},
		{name: "200 staff false", identity: answer(200, `{"user":{"id":"u1","email":"a@b.c","staff":false}}`),
			token: "t", wantStatus: 403, wantCode: "forbidden"},
		{name: "200 staff missing", identity: answer(200, `{"user":{"id":"u1"}}`),
			token: "t", wantStatus: 403, wantCode: "forbidden"},
		{name: "200 staff null", identity: answer(200, `{"user":{"id":"u1","staff":null}}`),
			token: "t", wantStatus: 403, wantCode: "forbidden"},
		{name: "200 empty user id", identity: answer(200, `{"user":{"id":"","staff":true}}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "empty_user_id"},
		{name: "200 blank user id", identity: answer(200, `{"user":{"id":"  ","staff":true}}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "empty_user_id"},
		{name: "200 missing user id", identity: answer(200, `{"user":{"staff":true}}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "empty_user_id"},
		{name: "200 missing user", identity: answer(200, `{"staff":true}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "empty_user_id"},
		{name: "200 malformed body", identity: answer(200, `{"user":`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "malformed_body"},
		{name: "200 html body", identity: answer(200, `<html>ok</html>`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "malformed_body"},
		{name: "200 staff of the wrong type", identity: answer(200, `{"user":{"id":"u1","staff":"true"}}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "malformed_body"},
		{name: "200 oversized body", identity: answer(200, `{"user":{"id":"u1","staff":true,"pad":"`+strings.Repeat("x", 70<<10)+`"}}`),
			token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "body_too_large"},
		{name: "401", identity: answer(401, `{}`), token: "t", wantStatus: 401, wantCode: "unauthenticated"},
		{name: "403", identity: answer(403, `{}`), token: "t", wantStatus: 403, wantCode: "forbidden"},
		{name: "404", identity: answer(404, `{}`), token: "t", wantStatus: 403, wantCode: "forbidden"},
		{name: "400", identity: answer(400, `{}`), token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "unexpected_status"},
		{name: "429", identity: answer(429, `{}`), token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "unexpected_status"},
		{name: "500", identity: answer(500, `{}`), token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "unexpected_status"},
		{name: "502", identity: answer(502, `bad gateway`), token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "unexpected_status"},
		{name: "204", identity: answer(204, ``), token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "unexpected_status"},
		{name: "redirect to a staff answer", identity: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/elsewhere" {
				answer(200, `{"user":{"id":"u1","staff":true}}`)(w, r)
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "redirect"},
		{name: "timeout", identity: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			answer(200, `{"user":{"id":"u1","staff":true}}`)(w, r)
		}, opts: envOptions{identityTimeout: 50 * time.Millisecond}, token: "t", wantStatus: 503, wantCode: "unavailable", wantClass: "timeout"},
		{name: "connection refused", opts: envOptions{identityURL: &closedURL},
			token: staffToken, wantStatus: 503, wantCode: "unavailable", wantClass: "transport", noCall: true},
		{name: "empty BOX_IDENTITY_URL", opts: envOptions{identityURL: ptr("")},
			token: staffToken, wantStatus: 503, wantCode: "unavailable", wantClass: "not_configured", noCall: true},
		{name: "missing bearer", token: "", wantStatus: 401, wantCode: "unauthenticated", noCall: true},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := newEnv(t, engine, c.opts)
				if c.identity != nil {
					e.identity.setOverride(c.identity)
				}
				res := e.do("POST", "/v1/operator/entitlements", c.token, grantBody)
				if res.status != c.wantStatus || res.errorCode() != c.wantCode {
					t.Fatalf("status %d code %q, want %d %q (body %s)", res.status, res.errorCode(), c.wantStatus, c.wantCode, res.raw)
				}
				if c.noCall && e.identity.calls.Load() != 0 {
					t.Errorf("identity was called %d times, want 0", e.identity.calls.Load())
				}
				if !c.noCall && e.identity.calls.Load() != 1 {
					t.Errorf("identity was called %d times, want exactly 1 (no redirect followed)", e.identity.calls.Load())
				}
				if c.wantStatus == 201 {
					if got := e.count(`SELECT count(*) FROM entitlements WHERE granted_by = $1`, staffID); got != 1 {
						t.Errorf("rows granted by the staff member = %d, want 1", got)
					}
					if got := e.count(`SELECT count(*) FROM entitlement_events WHERE actor_user_id = $1 AND action = 'grant'`, staffID); got != 1 {
						t.Errorf("grant events by the staff member = %d, want 1", got)
					}
					return
				}
				if n := e.written(); n != 0 {
					t.Errorf("a refused grant wrote %d rows", n)
				}
				wantMsg := map[string]string{
					"unauthenticated": "valid bearer token required",
					"forbidden":       "platform staff only",
					"unavailable":     "authorization service unavailable",
				}[c.wantCode]
				if res.errorMessage() != wantMsg {
					t.Errorf("message %q, want %q", res.errorMessage(), wantMsg)
				}
				logs := e.logs.String()
				if c.wantClass != "" && !strings.Contains(logs, `"class":"`+c.wantClass+`"`) {
					t.Errorf("logs do not record class %q:\n%s", c.wantClass, logs)
				}
				if c.wantClass != "" && strings.Contains(res.raw, c.wantClass) {
					t.Errorf("the response reveals the failure class: %s", res.raw)
				}
				for _, tok := range []string{"Bearer t", staffToken} {
					if strings.Contains(logs, tok) {
						t.Errorf("logs contain the token %q", tok)
					}
				}
			})
		}
	})
}

// TestStaffCheckForwarding shows box forwards the caller's token and its
// trace context to identity.
func TestStaffCheckForwarding(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	req := httptest.NewRequest("GET", "/v1/operator/entitlements", nil)
	req.Header.Set("Authorization", "Bearer "+staffToken)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	e.identity.mu.Lock()
	defer e.identity.mu.Unlock()
	if e.identity.lastAuth != "Bearer "+staffToken {
		t.Errorf("identity saw Authorization %q", e.identity.lastAuth)
	}
	if !strings.HasPrefix(e.identity.lastTP, "00-"+traceID+"-") {
		t.Errorf("identity saw traceparent %q, want trace %s", e.identity.lastTP, traceID)
	}
}

// TestEveryStaffRouteFailsClosed: each operator route answers 401 without
// a token and 503 when identity fails, changing nothing.
func TestEveryStaffRouteFailsClosed(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	row := e.grant(account, "platform", "")
	before := e.written()
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/operator/entitlements", `{"account_id":"` + otherAcct + `"}`},
		{"POST", "/v1/operator/entitlements/" + idPath(row) + "/revoke", ""},
		{"GET", "/v1/operator/entitlements", ""},
		{"POST", "/v1/operator/releases", `{"product":"platform","version":"1.0.0"}`},
		{"GET", "/v1/operator/releases", ""},
	}
	for _, r := range routes {
		if res := e.do(r.method, r.path, "", r.body); res.status != 401 || res.errorCode() != "unauthenticated" {
			t.Errorf("%s %s without token: %d %s", r.method, r.path, res.status, res.raw)
		}
		if res := e.do(r.method, r.path, buyerToken, r.body); res.status != 403 || res.errorCode() != "forbidden" {
			t.Errorf("%s %s as non-staff: %d %s", r.method, r.path, res.status, res.raw)
		}
	}
	e.identity.setOverride(answer(500, `{}`))
	for _, r := range routes {
		if res := e.do(r.method, r.path, staffToken, r.body); res.status != 503 || res.errorCode() != "unavailable" {
			t.Errorf("%s %s with identity down: %d %s", r.method, r.path, res.status, res.raw)
		}
	}
	if after := e.written(); after != before {
		t.Errorf("refused calls changed the row count from %d to %d", before, after)
	}
	if got := e.count(`SELECT count(*) FROM entitlements WHERE status = 'active'`); got != 1 {
		t.Errorf("active rows = %d, want 1 (the revoke must not have happened)", got)
	}
}

// TestStaffCheckRunsFirst: a bad body from a caller identity refuses is
// answered with identity's refusal, not the body's problem.
func TestStaffCheckRunsFirst(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	if res := e.do("POST", "/v1/operator/entitlements", "bogus", `{not json`); res.status != 401 {
		t.Errorf("bad token and bad body: %d, want 401", res.status)
	}
	if res := e.do("POST", "/v1/operator/entitlements", buyerToken, `{"account_id":"x"}`); res.status != 403 {
		t.Errorf("non-staff and invalid body: %d, want 403", res.status)
	}
}

// TestMembershipCheck covers the customer routes' identity round trip:
// member, non-member (404, never 403), bad token, and every failure, each
// refusal writing nothing.
func TestMembershipCheck(t *testing.T) {
	fetch := `{"artifact":"kit"}`
	cases := []struct {
		name       string
		identity   http.HandlerFunc
		token      string
		path       string
		wantStatus int
		wantCode   string
		noCall     bool
	}{
		{name: "member", token: buyerToken, wantStatus: 201},
		{name: "member, upper-case account id", token: buyerToken, path: strings.ToUpper(account), wantStatus: 201},
		{name: "non-member", token: strangerTok, wantStatus: 404, wantCode: "not_found"},
		{name: "staff is not a member", token: staffToken, wantStatus: 404, wantCode: "not_found"},
		{name: "bad token", token: "nope", wantStatus: 401, wantCode: "unauthenticated"},
		{name: "identity 403", identity: answer(403, `{}`), token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "identity 500", identity: answer(500, `{}`), token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "identity redirect", identity: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/v1/accounts/"+account+"/x", http.StatusTemporaryRedirect)
		}, token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "identity malformed", identity: answer(200, `[`), token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "identity answers another account", identity: answer(200, `{"id":"`+otherAcct+`","role":"owner"}`),
			token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "identity answers no role", identity: answer(200, `{"id":"`+account+`"}`),
			token: "t", wantStatus: 503, wantCode: "unavailable"},
		{name: "malformed account id", token: buyerToken, path: "not-a-uuid", wantStatus: 404, wantCode: "not_found", noCall: true},
		{name: "missing bearer", token: "", wantStatus: 401, wantCode: "unauthenticated", noCall: true},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "kit", "")
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e.identity.setOverride(c.identity)
				e.identity.calls.Store(0)
				before := e.count(`SELECT count(*) FROM capabilities`)
				path := c.path
				if path == "" {
					path = account
				}
				res := e.do("POST", "/v1/accounts/"+path+"/artifact_fetches", c.token, fetch)
				if res.status != c.wantStatus || res.errorCode() != c.wantCode {
					t.Fatalf("status %d code %q, want %d %q (%s)", res.status, res.errorCode(), c.wantStatus, c.wantCode, res.raw)
				}
				if c.noCall != (e.identity.calls.Load() == 0) {
					t.Errorf("identity calls = %d, noCall %v", e.identity.calls.Load(), c.noCall)
				}
				after := e.count(`SELECT count(*) FROM capabilities`)
				if c.wantStatus == 201 && after != before+1 || c.wantStatus != 201 && after != before {
					t.Errorf("capabilities %d -> %d for status %d", before, after, res.status)
				}
			})
		}
	})
}

// TestClaimNeedsUserID: the claimant's id comes from identity's /v1/me; a
// failure there fails closed too.
func TestClaimNeedsUserID(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	e.identity.setOverride(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/me" {
			answer(200, `{"id":""}`)(w, r)
			return
		}
		answer(200, `{"id":"`+account+`","role":"member"}`)(w, r)
	})
	if res := e.do("POST", "/v1/accounts/"+account+"/claims", "t", ""); res.status != 503 {
		t.Fatalf("claim with an empty user id: %d %s", res.status, res.raw)
	}
	if n := e.written(); n != 0 {
		t.Errorf("wrote %d rows", n)
	}
}
