package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestProblemTraceID(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		tp := header("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		for _, r := range []resp{
			s.do(t, "GET", "/v1/me", nil, tp),
			s.do(t, "POST", "/v1/session", `{"email":`, tp),
			s.do(t, "POST", "/v1/users", map[string]string{"email": "x"}, tp),
			s.do(t, "GET", "/v1/nowhere", nil, tp),
		} {
			if r.Code < 400 {
				t.Fatalf("%s %s = %d", r.method, r.path, r.Code)
			}
			p := r.object(t)
			if p["trace_id"] != traceID {
				t.Errorf("%s %s: trace_id %v, want the traceparent's %s", r.method, r.path, p["trace_id"], traceID)
			}
		}
		// Without a (valid) traceparent every problem gets a new trace id.
		seen := map[any]bool{}
		for _, o := range []opt{func(*http.Request) {}, header("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"), header("traceparent", "garbage")} {
			p := s.do(t, "GET", "/v1/me", nil, o).problem(t, http.StatusUnauthorized, "unauthorized")
			if seen[p["trace_id"]] || p["trace_id"] == "00000000000000000000000000000000" {
				t.Errorf("trace_id %v reused or invalid", p["trace_id"])
			}
			seen[p["trace_id"]] = true
		}
	})
}

// TestDecoding: every route that reads a body refuses bad ones the same
// way, before doing anything.
func TestDecoding(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		ownerID, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		routes := []struct{ method, path string }{
			{"POST", "/v1/users"},
			{"POST", "/v1/session"},
			{"POST", "/v1/accounts"},
			{"PATCH", "/v1/accounts/" + acc},
			{"PATCH", "/v1/accounts/" + acc + "/members/" + ownerID},
			{"POST", "/v1/accounts/" + acc + "/invitations"},
			{"POST", "/v1/invitations/accept"},
			{"POST", "/v1/invitations/decline"},
			{"POST", "/v1/me/password"},
		}
		huge := `{"name":"` + strings.Repeat("x", httpx.MaxBodyBytes) + `"}`
		bodies := []struct {
			name, body, contentType string
			status                  int
			code                    string
		}{
			{"Malformed", `{"email":`, "application/json", 400, "malformed_json"},
			{"NotJSON", `email=a@b.co`, "application/json", 400, "malformed_json"},
			{"UnknownField", `{"unexpected":1}`, "application/json", 400, "malformed_json"},
			{"TrailingData", `{} {}`, "application/json", 400, "malformed_json"},
			{"TrailingGarbage", `{}x`, "application/json", 400, "malformed_json"},
			{"Array", `[]`, "application/json", 400, "malformed_json"},
			{"Empty", ``, "application/json", 400, "malformed_json"},
			{"WrongType", `{"email":1,"name":1,"role":1,"token":1}`, "application/json", 400, "malformed_json"},
			{"TooLarge", huge, "application/json", 413, "body_too_large"},
			{"FormContentType", `{}`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
			{"TextContentType", `{}`, "text/plain", 415, "unsupported_media_type"},
			{"BadContentType", `{}`, "application/", 415, "unsupported_media_type"},
		}
		before := s.env.Counts(t)
		for _, rt := range routes {
			for _, b := range bodies {
				r := s.do(t, rt.method, rt.path, b.body, bearer(owner), header("Content-Type", b.contentType))
				if r.Code != b.status {
					t.Errorf("%s %s %s = %d, want %d: %s", b.name, rt.method, rt.path, r.Code, b.status, r.Body)
					continue
				}
				r.problem(t, b.status, b.code)
			}
		}
		if after := s.env.Counts(t); len(before) != len(after) || before["outbox"] != after["outbox"] || before["accounts"] != after["accounts"] || before["users"] != after["users"] {
			t.Errorf("refused bodies wrote rows: %v → %v", before, after)
		}
		// A JSON content type with parameters, or a +json type, is fine.
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme Two"}, bearer(owner), header("Content-Type", "application/json; charset=utf-8")).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme Three"}, bearer(owner), header("Content-Type", "application/merge-patch+json")).want(t, http.StatusCreated)
	})
}

func TestSessionCookie(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		s.do(t, "POST", "/v1/users", map[string]string{"email": "ada@example.com", "password": identitytest.Password}).want(t, http.StatusCreated)
		r := s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": identitytest.Password}).want(t, http.StatusCreated)
		tok := r.object(t)["token"].(string)
		cookies := r.Header().Values("Set-Cookie")
		if len(cookies) != 1 || cookies[0] != "__Host-session="+tok+"; Path=/; Secure; HttpOnly; SameSite=Lax" {
			t.Fatalf("Set-Cookie = %q, want exactly __Host-session=<token>; Path=/; Secure; HttpOnly; SameSite=Lax", cookies)
		}
		if strings.Contains(strings.ToLower(cookies[0]), "domain") {
			t.Error("the cookie names a Domain")
		}
		parsed := r.Result().Cookies()
		if len(parsed) != 1 || parsed[0].Name != "__Host-session" || parsed[0].Value != tok || !parsed[0].Secure || !parsed[0].HttpOnly ||
			parsed[0].SameSite != http.SameSiteLaxMode || parsed[0].Path != "/" || parsed[0].Domain != "" {
			t.Errorf("parsed cookie = %+v", parsed)
		}

		me := s.do(t, "GET", "/v1/me", nil, cookie(tok)).want(t, http.StatusOK).object(t)
		if me["email"] != "ada@example.com" {
			t.Errorf("me by cookie = %v", me)
		}
		// A bearer header wins over the cookie.
		s.do(t, "GET", "/v1/me", nil, cookie(tok), bearer("not-a-token")).problem(t, http.StatusUnauthorized, "unauthorized")

		// Cookie-borne state changes from another origin, or without an
		// origin, are refused: the Origin must be the issuer's origin
		// exactly (scheme, host, port), or the browser must say
		// Sec-Fetch-Site: same-origin. The request's own Host is no proof.
		body := map[string]string{"name": "Cross Site"}
		refused := []struct {
			name string
			opts []opt
		}{
			{"ErrNoOrigin", nil},
			{"ErrOtherOrigin", []opt{header("Origin", "https://evil.example")}},
			{"ErrNullOrigin", []opt{header("Origin", "null")}},
			{"ErrSuffixOrigin", []opt{header("Origin", "http://identity.test.evil.example")}},
			{"ErrOtherScheme", []opt{header("Origin", "https://identity.test")}},
			{"ErrOtherPort", []opt{header("Origin", "http://identity.test:8080")}},
			{"ErrRequestHostOnly", []opt{header("Origin", "http://example.com")}},
			{"ErrSameSite", []opt{header("Sec-Fetch-Site", "same-site")}},
			{"ErrCrossSiteWithMatchingHost", []opt{header("Sec-Fetch-Site", "cross-site"), header("Origin", "http://example.com")}},
		}
		for _, tt := range refused {
			t.Run(tt.name, func(t *testing.T) {
				s.do(t, "POST", "/v1/accounts", body, append([]opt{cookie(tok)}, tt.opts...)...).problem(t, http.StatusForbidden, "forbidden")
				s.do(t, "DELETE", "/v1/session", nil, append([]opt{cookie(tok)}, tt.opts...)...).problem(t, http.StatusForbidden, "forbidden")
			})
		}
		if n := s.env.Count(t, "accounts"); n != 1 {
			t.Errorf("accounts = %d after refused cross-origin posts", n)
		}
		// A cross-origin read is harmless; a same-origin write and a
		// bearer-authenticated one from anywhere are allowed.
		s.do(t, "GET", "/v1/me", nil, cookie(tok), header("Origin", "https://evil.example")).want(t, http.StatusOK)
		s.do(t, "POST", "/v1/accounts", body, cookie(tok), header("Origin", "http://identity.test")).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Default Port"}, cookie(tok), header("Origin", "HTTP://Identity.Test:80")).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Fetch Metadata"}, cookie(tok), header("Sec-Fetch-Site", "same-origin")).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Bearer Site"}, bearer(tok), header("Origin", "https://evil.example")).want(t, http.StatusCreated)

		s.do(t, "DELETE", "/v1/session", nil, cookie(tok), header("Origin", "http://identity.test")).want(t, http.StatusNoContent)
		s.do(t, "GET", "/v1/me", nil, cookie(tok)).problem(t, http.StatusUnauthorized, "unauthorized")
	})
}

// TestTenantMatrix: every account route answers an outsider, an unknown
// account and a malformed id with the same 404, and a member below the
// route's minimum role with 403, before reading the body.
func TestTenantMatrix(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		ownerID, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		join := func(email, role string) (string, string) {
			id, tok := s.signUp(t, email)
			inv := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", map[string]string{"email": email, "role": role}, bearer(owner)).want(t, http.StatusCreated).object(t)
			s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv["token"].(string)}, bearer(tok)).want(t, http.StatusOK)
			return id, tok
		}
		_, admin := join("admin@example.com", "admin")
		memberID, member := join("member@example.com", "member")
		_, outsider := s.signUp(t, "outsider@example.com")
		unknownAcc := "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d"

		routes := []struct {
			method, path, body string
			below              string // a token below the minimum role, or "" when the minimum is member
		}{
			{"GET", "/v1/accounts/{id}", "", ""},
			{"PATCH", "/v1/accounts/{id}", `{"name":"Taken Over"}`, member},
			{"DELETE", "/v1/accounts/{id}", "", admin},
			{"GET", "/v1/accounts/{id}/members", "", ""},
			{"PATCH", "/v1/accounts/{id}/members/" + memberID, `{"role":"owner"}`, admin},
			{"DELETE", "/v1/accounts/{id}/members/" + ownerID, "", member},
			{"POST", "/v1/accounts/{id}/invitations", `{"email":"x@example.com","role":"admin"}`, member},
		}
		before := s.env.Counts(t)
		for _, rt := range routes {
			path := func(id string) string { return strings.Replace(rt.path, "{id}", id, 1) }
			var body any
			if rt.body != "" {
				body = rt.body
			}
			unknown := s.do(t, rt.method, path(unknownAcc), body, bearer(owner)).problem(t, http.StatusNotFound, "not_found")
			cases := []struct {
				name string
				r    resp
			}{
				{"Outsider", s.do(t, rt.method, path(acc), body, bearer(outsider))},
				{"OutsiderWithBadBody", s.do(t, rt.method, path(acc), `{"bad":`, bearer(outsider))},
				{"Malformed", s.do(t, rt.method, path("not-a-uuid"), body, bearer(owner))},
				{"UpperCase", s.do(t, rt.method, path(strings.ToUpper(acc)), body, bearer(owner))},
				{"Braces", s.do(t, rt.method, path("%7B"+acc+"%7D"), body, bearer(owner))},
			}
			for _, c := range cases {
				p := c.r.problem(t, http.StatusNotFound, "not_found")
				if p["detail"] != unknown["detail"] || p["code"] != unknown["code"] {
					t.Errorf("%s %s %s: %v, want the unknown account's %v", c.name, rt.method, rt.path, p, unknown)
				}
			}
			s.do(t, rt.method, path(acc), body).problem(t, http.StatusUnauthorized, "unauthorized")
			if rt.below != "" {
				p := s.do(t, rt.method, path(acc), body, bearer(rt.below)).problem(t, http.StatusForbidden, "forbidden")
				if !strings.Contains(p["detail"].(string), "role") {
					t.Errorf("403 detail %q does not say the role does not permit it", p["detail"])
				}
				s.do(t, rt.method, path(acc), `{"bad":`, bearer(rt.below)).problem(t, http.StatusForbidden, "forbidden")
			}
		}
		if after := s.env.Counts(t); after["outbox"] != before["outbox"] || after["memberships"] != before["memberships"] || after["invitations"] != before["invitations"] {
			t.Errorf("refused requests wrote rows: %v → %v", before, after)
		}
		// Members do read.
		s.do(t, "GET", "/v1/accounts/"+acc, nil, bearer(member)).want(t, http.StatusOK)
		s.do(t, "GET", "/v1/accounts/"+acc+"/members", nil, bearer(member)).want(t, http.StatusOK)
		// An admin removes a member, never an owner.
		s.do(t, "DELETE", "/v1/accounts/"+acc+"/members/"+ownerID, nil, bearer(admin)).problem(t, http.StatusForbidden, "forbidden")
		s.do(t, "DELETE", "/v1/accounts/"+acc+"/members/"+memberID, nil, bearer(admin)).want(t, http.StatusNoContent)
	})
}

func TestLockedAnswer(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{LockoutThreshold: 3, LockoutDuration: 15 * time.Minute})
		s.signUp(t, "ada@example.com")
		wrong := map[string]string{"email": "ada@example.com", "password": "wrong password"}
		right := map[string]string{"email": "ada@example.com", "password": identitytest.Password}
		for i := 0; i < 3; i++ {
			s.do(t, "POST", "/v1/session", wrong).problem(t, http.StatusUnauthorized, "unauthorized")
		}
		for _, tt := range []struct {
			advance time.Duration
			want    string
		}{
			{0, "900"},
			{500 * time.Millisecond, "900"}, // 899.5 s rounds up
			{14*time.Minute + 59*time.Second, "1"},
		} {
			s.env.Clock.Advance(tt.advance)
			r := s.do(t, "POST", "/v1/session", right)
			r.problem(t, http.StatusLocked, "account_locked")
			if ra := r.Header().Get("Retry-After"); ra != tt.want {
				t.Errorf("Retry-After = %q, want %q", ra, tt.want)
			}
			if n, err := strconv.Atoi(r.Header().Get("Retry-After")); err != nil || n < 1 {
				t.Errorf("Retry-After %q is not whole seconds", r.Header().Get("Retry-After"))
			}
			if r.Header().Get("Set-Cookie") != "" {
				t.Error("a locked login set a cookie")
			}
		}
		s.env.Clock.Advance(time.Second)
		s.do(t, "POST", "/v1/session", right).want(t, http.StatusCreated)
	})
}

func TestWithoutDatabase(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	none := func(context.Context) httpx.Readiness {
		return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": "none"}}
	}
	for name, deps := range map[string]httpapi.Deps{
		"AsIdentitycmdWiresIt": {Logger: logger, Ready: none},
		"NoReadinessCheck":     {Logger: logger},
	} {
		t.Run(name, func(t *testing.T) {
			s := &server{h: openapitest.Wrap(t, httpapi.OpenAPI(), httpapi.NewServer(deps))}
			ready := s.do(t, "GET", "/readyz", nil).want(t, http.StatusOK).object(t)
			wantKeys(t, "readyz", ready, "status", "deps")
			if ready["status"] != "ok" || ready["deps"] != "none" {
				t.Errorf("readyz = %v", ready)
			}
			s.do(t, "GET", "/healthz", nil).want(t, http.StatusOK)
			for _, rt := range []struct{ method, path, body string }{
				{"POST", "/v1/users", `{"email":"a@b.co","password":"12345678"}`},
				{"POST", "/v1/session", `{"email":"a@b.co","password":"12345678"}`},
				{"DELETE", "/v1/session", ""},
				{"GET", "/v1/me", ""},
				{"GET", "/v1/operator/me", ""},
				{"GET", "/v1/operator/users?query=ab", ""},
				{"GET", "/v1/accounts", ""},
				{"POST", "/v1/accounts", `{"name":"Acme"}`},
				{"GET", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", ""},
				{"PATCH", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", `{"name":"B"}`},
				{"DELETE", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", ""},
				{"GET", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d/members", ""},
				{"PATCH", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d/members/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3e", `{"role":"admin"}`},
				{"DELETE", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d/members/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3e", ""},
				{"POST", "/v1/accounts/6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d/invitations", `{"email":"a@b.co","role":"member"}`},
				{"POST", "/v1/invitations/accept", `{"token":"x"}`},
				{"GET", "/.well-known/jwks.json", ""},
			} {
				var body any
				if rt.body != "" {
					body = rt.body
				}
				s.do(t, rt.method, rt.path, body, bearer("anything")).problem(t, http.StatusNotFound, "not_found")
			}
		})
	}
}

// TestSecretsStayOutOfLogs: passwords, tokens and invitation tokens never
// reach the log, whatever the request.
func TestSecretsStayOutOfLogs(t *testing.T) {
	s := newServer(t, sqldb.SQLite, identitytest.Config{})
	_, owner := s.signUp(t, "owner@example.com")
	acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
	inv := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", map[string]string{"email": "j@example.com", "role": "member"}, bearer(owner)).want(t, http.StatusCreated).object(t)["token"].(string)
	_, joiner := s.signUp(t, "j@example.com")
	s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv}, bearer(joiner)).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/session", map[string]string{"email": "owner@example.com", "password": "wrong secret pw"}).want(t, http.StatusUnauthorized)
	s.do(t, "GET", "/v1/operator/users?query=secret-query", nil, bearer(owner)).want(t, http.StatusForbidden)
	logs := s.logs.String()
	if !strings.Contains(logs, `"path":"/v1/session"`) {
		t.Fatalf("no request was logged: %q", logs)
	}
	for _, secret := range []string{identitytest.Password, "wrong secret pw", owner, joiner, inv, "secret-query"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret (%.12s…)", secret)
		}
	}
}

// TestIdempotentReplayOnlyWhileAuthorized: identity authenticates and
// authorizes every request before the Idempotency-Key layer, so a stored
// answer (an invitation token) is not replayed after sign-out or after the
// caller loses the role, and another user's same key is their own.
func TestIdempotentReplayOnlyWhileAuthorized(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		adminID, admin := s.signUp(t, "admin@example.com")
		inv := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", map[string]string{"email": "admin@example.com", "role": "admin"}, bearer(owner)).want(t, http.StatusCreated).object(t)
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv["token"].(string)}, bearer(admin)).want(t, http.StatusOK)

		invite := map[string]string{"email": "new@example.com", "role": "member"}
		key := header("Idempotency-Key", "invite-new")
		first := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", invite, bearer(admin), key).want(t, http.StatusCreated)
		if r := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", invite, bearer(admin), key).want(t, http.StatusCreated); r.Header().Get("Idempotent-Replayed") != "true" || r.Body.String() != first.Body.String() {
			t.Fatalf("replay while authorized = %q %s, want the first answer replayed", r.Header().Get("Idempotent-Replayed"), r.Body)
		}
		// The owner, using the admin's key and body, makes a request of
		// their own.
		if r := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", invite, bearer(owner), key).want(t, http.StatusCreated); r.Header().Get("Idempotent-Replayed") != "" {
			t.Error("another user's request with the same key was answered with a replay")
		}

		// Demoted to member: 403, no replay.
		s.do(t, "PATCH", "/v1/accounts/"+acc+"/members/"+adminID, map[string]string{"role": "member"}, bearer(owner)).want(t, http.StatusOK)
		if r := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", invite, bearer(admin), key); r.Code != http.StatusForbidden || strings.Contains(r.Body.String(), first.object(t)["token"].(string)) {
			t.Errorf("replay after demotion = %d %s, want 403 without the invitation", r.Code, r.Body)
		}

		// Signed out: 401, no replay.
		accountKey := header("Idempotency-Key", "acct-1")
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Beta"}, bearer(owner), accountKey).want(t, http.StatusCreated)
		s.do(t, "DELETE", "/v1/session", nil, bearer(owner)).want(t, http.StatusNoContent)
		if r := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Beta"}, bearer(owner), accountKey); r.Code != http.StatusUnauthorized || r.Header().Get("Idempotent-Replayed") != "" {
			t.Errorf("replay after sign-out = %d replayed %q, want 401", r.Code, r.Header().Get("Idempotent-Replayed"))
		}
	})
}

// TestRenameAppliesTheHandleRule: renaming to a name whose handle another
// account holds is the same 409 as creating it; renaming to a name that
// derives the account's own handle is fine.
func TestRenameAppliesTheHandleRule(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, owner := s.signUp(t, "owner@example.com")
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "ACME!"}, bearer(owner)).problem(t, http.StatusConflict, "conflict")
		beta := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Beta"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		for _, name := range []string{"Acme", "acme", "ACME!", "Ácme"} {
			s.do(t, "PATCH", "/v1/accounts/"+beta, map[string]string{"name": name}, bearer(owner)).problem(t, http.StatusConflict, "conflict")
		}
		if got := s.do(t, "GET", "/v1/accounts/"+beta, nil, bearer(owner)).want(t, http.StatusOK).object(t)["name"]; got != "Beta" {
			t.Errorf("name after refused renames = %v, want Beta", got)
		}
		s.do(t, "PATCH", "/v1/accounts/"+beta, map[string]string{"name": "BETA"}, bearer(owner)).want(t, http.StatusOK)
		s.do(t, "PATCH", "/v1/accounts/"+beta, map[string]string{"name": "Gamma"}, bearer(owner)).want(t, http.StatusOK)
	})
}

// TestTextRules: text is stored in NFC, and every text field refuses
// control, bidi-control, zero-width and other default-ignorable
// characters; names also refuse fullwidth and other compatibility
// characters and words mixing scripts, and addresses the same in their
// local part or a domain label: a 422 naming the field, never a 500.
func TestTextRules(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		pw := identitytest.Password
		keys := "/v1/accounts/" + acc + "/api_keys"
		tests := []struct {
			name, method, path string
			body               any
			field              string
		}{
			{"ErrEmailMixedScripts", "POST", "/v1/users", map[string]string{"email": "\u0430lice@example.com", "password": pw}, "email"},
			{"ErrEmailDomainMixedScripts", "POST", "/v1/users", map[string]string{"email": "alice@ex\u0430mple.com", "password": pw}, "email"},
			{"ErrEmailRightToLeftOverride", "POST", "/v1/users", map[string]string{"email": "alice\u202e@example.com", "password": pw}, "email"},
			{"ErrEmailZeroWidth", "POST", "/v1/users", map[string]string{"email": "al\u200bice@example.com", "password": pw}, "email"},
			{"ErrEmailHangulFiller", "POST", "/v1/users", map[string]string{"email": "al\u3164ice@example.com", "password": pw}, "email"},
			{"ErrEmailVariationSelector", "POST", "/v1/users", map[string]string{"email": "alice\ufe0f@example.com", "password": pw}, "email"},
			{"ErrEmailFullwidth", "POST", "/v1/users", map[string]string{"email": "\uff41\uff4c\uff49\uff43\uff45@example.com", "password": pw}, "email"},
			{"ErrEmailFullwidthUpperCase", "POST", "/v1/users", map[string]string{"email": "\uff21\uff2c\uff29\uff23\uff25@example.com", "password": pw}, "email"},
			{"ErrEmailFullwidthDomain", "POST", "/v1/users", map[string]string{"email": "alice@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com", "password": pw}, "email"},
			{"ErrEmailFullwidthAt", "POST", "/v1/users", map[string]string{"email": "alice\uff20example.com", "password": pw}, "email"},
			{"ErrDisplayNameBidiOverride", "POST", "/v1/users", map[string]string{"email": "dn@example.com", "password": pw, "display_name": "Ada\u202eecalB"}, "display_name"},
			{"ErrDisplayNameZeroWidth", "POST", "/v1/users", map[string]string{"email": "dn@example.com", "password": pw, "display_name": "A\u200dda"}, "display_name"},
			{"ErrDisplayNameHangulFiller", "POST", "/v1/users", map[string]string{"email": "dn@example.com", "password": pw, "display_name": "\u3164"}, "display_name"},
			{"ErrDisplayNameMixedScripts", "POST", "/v1/users", map[string]string{"email": "dn@example.com", "password": pw, "display_name": "\u0410da"}, "display_name"},
			{"ErrDisplayNameFullwidth", "POST", "/v1/users", map[string]string{"email": "dn@example.com", "password": pw, "display_name": "\uff21\uff44\uff41"}, "display_name"},
			{"ErrAccountNameZeroWidth", "POST", "/v1/accounts", map[string]string{"name": "Ac\u200bme Two"}, "name"},
			{"ErrAccountNameBidiIsolate", "POST", "/v1/accounts", map[string]string{"name": "Acme \u2067Two"}, "name"},
			{"ErrAccountNameHangulFiller", "POST", "/v1/accounts", map[string]string{"name": "Acme\u3164Two"}, "name"},
			{"ErrAccountNameVariationSelector", "POST", "/v1/accounts", map[string]string{"name": "Acme\ufe0f Two"}, "name"},
			{"ErrAccountNameVariationSelectorSupplement", "POST", "/v1/accounts", map[string]string{"name": "Acme Two\U000e0100"}, "name"},
			{"ErrAccountNameCombiningGraphemeJoiner", "POST", "/v1/accounts", map[string]string{"name": "Ac\u034fme Two"}, "name"},
			{"ErrAccountNameMixedScripts", "POST", "/v1/accounts", map[string]string{"name": "\u0410cme Two"}, "name"},
			{"ErrAccountNameFullwidth", "POST", "/v1/accounts", map[string]string{"name": "\uff21\uff43\uff4d\uff45 Two"}, "name"},
			{"ErrRenameZeroWidth", "PATCH", "/v1/accounts/" + acc, map[string]string{"name": "Acme\ufeff"}, "name"},
			{"ErrRenameMixedScripts", "PATCH", "/v1/accounts/" + acc, map[string]string{"name": "\u0410cme"}, "name"},
			{"ErrRenameFullwidth", "PATCH", "/v1/accounts/" + acc, map[string]string{"name": "\uff21\uff43\uff4d\uff45"}, "name"},
			{"ErrInvitationEmailMixedScripts", "POST", "/v1/accounts/" + acc + "/invitations", map[string]string{"email": "b\u03bfb@example.com", "role": "member"}, "email"},
			{"ErrInvitationEmailFullwidth", "POST", "/v1/accounts/" + acc + "/invitations", map[string]string{"email": "\uff42\uff4f\uff42@example.com", "role": "member"}, "email"},
			{"ErrEmailChangeFullwidth", "POST", "/v1/me/email", map[string]string{"email": "\uff4f\uff57\uff4e\uff45\uff52@example.com", "password": pw}, "email"},
			{"ErrEmailChangeMixedScripts", "POST", "/v1/me/email", map[string]string{"email": "\u043ewner@example.com", "password": pw}, "email"},
			{"ErrAPIKeyNameMixedScripts", "POST", keys, map[string]any{"name": "\u0441i", "scopes": []string{"account:read"}}, "name"},
			{"ErrAPIKeyNameHangulFiller", "POST", keys, map[string]any{"name": "\u3164", "scopes": []string{"account:read"}}, "name"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := s.do(t, tt.method, tt.path, tt.body, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
				if got := strings.Join(fieldErrors(p), ","); got != tt.field+":invalid" {
					t.Errorf("errors = %s, want %s:invalid", got, tt.field)
				}
			})
		}
		// Names in one script, or with words in scripts that may combine,
		// stay valid.
		for _, name := range []string{"Zo\u00eb & Co", "東京チーム Tokyo", "Beta Россия"} {
			s.do(t, "POST", "/v1/accounts", map[string]string{"name": name}, bearer(owner)).want(t, http.StatusCreated)
		}
		s.do(t, "POST", "/v1/users", map[string]string{"email": "tokyo@example.com", "password": pw, "display_name": "東京チーム"}).want(t, http.StatusCreated)
		if n := s.env.Count(t, "users"); n != 2 {
			t.Errorf("%d users, want 2: a refused sign-up wrote one", n)
		}
		// A decomposed é is the same address as a precomposed one.
		s.do(t, "POST", "/v1/users", map[string]string{"email": "jose\u0301@example.com", "password": pw, "display_name": "Jose\u0301"}).want(t, http.StatusCreated)
		s.do(t, "POST", "/v1/users", map[string]string{"email": "jos\u00e9@example.com", "password": pw}).problem(t, http.StatusConflict, "conflict")
		tok := s.do(t, "POST", "/v1/session", map[string]string{"email": "jos\u00e9@example.com", "password": pw}).want(t, http.StatusCreated).object(t)["token"].(string)
		me := s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)
		if me["email"] != "jos\u00e9@example.com" || me["display_name"] != "Jos\u00e9" {
			t.Errorf("me = %q %q, want both in NFC", me["email"], me["display_name"])
		}
	})
}

// TestAmbiguousJSONIsRefused: a key given twice, or matching a field only
// in another case, is a 400 problem, not the last value silently winning.
func TestAmbiguousJSONIsRefused(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		tests := []struct{ name, path, body, detail string }{
			{"ErrDuplicateKey", "/v1/users", `{"email":"a@example.com","email":"b@example.com","password":"` + identitytest.Password + `"}`, `duplicate field "email"`},
			{"ErrKeyInAnotherCase", "/v1/users", `{"email":"a@example.com","EMAIL":"b@example.com","password":"` + identitytest.Password + `"}`, `unknown field "EMAIL"`},
			{"ErrRoleInAnotherCase", "/v1/accounts/" + acc + "/invitations", `{"email":"c@example.com","role":"member","Role":"admin"}`, `unknown field "Role"`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := s.do(t, "POST", tt.path, tt.body, bearer(owner)).problem(t, http.StatusBadRequest, "malformed_json")
				if d, _ := p["detail"].(string); !strings.Contains(d, tt.detail) {
					t.Errorf("detail = %q, want it to contain %q", d, tt.detail)
				}
			})
		}
		if n := s.env.Count(t, "invitations"); n != 0 {
			t.Errorf("invitations = %d after refused bodies, want 0", n)
		}
	})
}
