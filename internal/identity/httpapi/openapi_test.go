package httpapi

// These tests hold identity's OpenAPI document to the code: it is valid
// OpenAPI 3.1, it names exactly the routes routes.go registers, and every
// response it declares is produced by the real handlers over a real
// database and validated against it (openapitest.Wrap). The white-box
// package keeps these helpers apart from the black-box suite's.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	if _, err := openapitest.Load(OpenAPI()); err != nil {
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
	var registered []string
	for _, m := range regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+) (/[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		registered = append(registered, m[1]+" "+m[2])
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" && method != "summary" && method != "description" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	if strings.Join(registered, "\n") != strings.Join(documented, "\n") {
		t.Errorf("routes.go registers:\n\t%s\nthe document declares:\n\t%s",
			strings.Join(registered, "\n\t"), strings.Join(documented, "\n\t"))
	}
	if len(registered) < 18 {
		t.Errorf("found only %d routes in routes.go; has the registration style changed?", len(registered))
	}
}

// TestOpenAPIServed: /openapi.json answers the embedded document, with or
// without a database.
func TestOpenAPIServed(t *testing.T) {
	c := newOAClient(t, NewHandler(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), nil)
	res := c.do("GET", "/openapi.json", "", 200)
	if got := res.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if res.Body.String() != string(OpenAPI()) {
		t.Error("GET /openapi.json does not answer the embedded document")
	}
}

// oaClient sends requests through the validating wrapper and records
// which declared responses it saw.
type oaClient struct {
	t    *testing.T
	h    http.Handler
	doc  *openapitest.Document
	seen map[string]bool
}

func newOAClient(t *testing.T, h http.Handler, seen map[string]bool) *oaClient {
	t.Helper()
	doc, err := openapitest.Load(OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	return &oaClient{t: t, h: openapitest.Wrap(t, OpenAPI(), h), doc: doc, seen: seen}
}

type oaOpt func(r *http.Request)

func oaBearer(token string) oaOpt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func oaHeader(k, v string) oaOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// do sends body (JSON unless a Content-Type option says otherwise) and
// fails the test unless the answer has status.
func (c *oaClient) do(method, path, body string, status int, opts ...oaOpt) *httptest.ResponseRecorder {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(r)
	}
	route, ok := c.doc.Route(r)
	if !ok {
		route = "UNMATCHED"
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	if w.Code != status {
		c.t.Fatalf("%s %s = %d, want %d: %s", method, path, w.Code, status, w.Body)
	}
	c.seen[route+" "+strconv.Itoa(w.Code)] = true
	return w
}

// code sends like do and also wants the problem's code.
func (c *oaClient) code(method, path, body string, status int, code string, opts ...oaOpt) {
	c.t.Helper()
	w := c.do(method, path, body, status, opts...)
	var p struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != code {
		c.t.Fatalf("%s %s: code = %q, want %q (%s)", method, path, p.Code, code, w.Body)
	}
}

func (c *oaClient) json(method, path, body string, status int, dst any, opts ...oaOpt) {
	c.t.Helper()
	w := c.do(method, path, body, status, opts...)
	if err := json.Unmarshal(w.Body.Bytes(), dst); err != nil {
		c.t.Fatalf("%s %s: %v (%s)", method, path, err, w.Body)
	}
}

// claimKey records an unfinished Idempotency-Key claim, as a request
// still being processed leaves it, so the next request with the key is
// told so. It mirrors internal/idempotency's digest and fingerprint.
func claimKey(t *testing.T, db *sqldb.DB, scope, key, method, path, body string) {
	t.Helper()
	digest := sha256.Sum256([]byte("idempotency-key-digest\x00" + key))
	fp := sha256.Sum256([]byte(method + " " + path + "\n" + body))
	_, err := db.Exec(context.Background(), `INSERT INTO idempotency_keys (scope, key_digest, fingerprint, created_at) VALUES ($1, $2, $3, $4)`,
		scope, hex.EncodeToString(digest[:]), hex.EncodeToString(fp[:]), db.Now())
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIConformance drives every declared response of every route
// through the validating wrapper, over a real database on each engine,
// and fails on any response the document does not allow or any declared
// response no request produced.
func TestOpenAPIConformance(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		seen := map[string]bool{}
		c := newOAClient(t, NewHandler(Deps{
			Service:     env.Service,
			Idempotency: idempotency.New(env.DB),
			Ready: func(ctx context.Context) httpx.Readiness {
				if err := env.DB.Ready(ctx); err != nil {
					return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": string(env.DB.Engine)}}
				}
				return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": string(env.DB.Engine)}}
			},
			Logger: logger,
		}), seen)

		const pw = `"password":"correct horse battery"`
		big := `{"name":"` + strings.Repeat("a", httpx.MaxBodyBytes) + `"}`
		plain := oaHeader("Content-Type", "text/plain")
		evil := oaHeader("Origin", "https://evil.example")

		// Probes and documents.
		c.do("GET", "/healthz", "", 200)
		c.do("GET", "/readyz", "", 200)
		c.do("GET", "/openapi.json", "", 200)
		c.do("GET", "/.well-known/jwks.json", "", 200)
		c.code("GET", "/no/such/route", "", 404, "not_found")
		c.code("PUT", "/v1/users", `{}`, 404, "not_found")

		// Registration.
		var owner struct{ ID, Email string }
		c.json("POST", "/v1/users", `{"email":"Owner@Example.com",`+pw+`,"display_name":"Olive"}`, 201, &owner, oaHeader("Idempotency-Key", "reg-1"))
		c.do("POST", "/v1/users", `{"email":"Owner@Example.com",`+pw+`,"display_name":"Olive"}`, 201, oaHeader("Idempotency-Key", "reg-1"))
		c.code("POST", "/v1/users", `{"email":"other@example.com",`+pw+`}`, 422, "idempotency_key_reused", oaHeader("Idempotency-Key", "reg-1"))
		c.code("POST", "/v1/users", `{"email":"x@example.com",`+pw+`}`, 400, "idempotency_key_invalid", oaHeader("Idempotency-Key", "has space"))
		claimKey(t, env.DB, "anonymous", "reg-busy", "POST", "/v1/users", `{"email":"busy@example.com",`+pw+`}`)
		c.code("POST", "/v1/users", `{"email":"busy@example.com",`+pw+`}`, 409, "idempotency_key_in_progress", oaHeader("Idempotency-Key", "reg-busy"))
		c.code("POST", "/v1/users", `{"email":"owner@example.com",`+pw+`}`, 409, "conflict")
		c.code("POST", "/v1/users", `{"email":"nope","password":"short"}`, 422, "validation_failed")
		c.code("POST", "/v1/users", `{"email":"a@example.com",`+pw+`,"admin":true}`, 400, "malformed_json")
		c.code("POST", "/v1/users", `{"email":"a@example.com",`+pw+`}`, 415, "unsupported_media_type", plain)
		c.code("POST", "/v1/users", big, 413, "body_too_large")
		for _, email := range []string{"admin@example.com", "member@example.com", "invitee@example.com", "staff@example.com", "locked@example.com", "late@example.com"} {
			c.do("POST", "/v1/users", `{"email":"`+email+`",`+pw+`}`, 201)
		}
		if err := env.Service.SetStaff(context.Background(), "staff@example.com", true); err != nil {
			t.Fatal(err)
		}

		// Sessions.
		login := func(email string) string {
			var s struct{ Token string }
			c.json("POST", "/v1/session", `{"email":"`+email+`",`+pw+`}`, 201, &s)
			return s.Token
		}
		ownerTok, adminTok, memberTok := login("owner@example.com"), login("admin@example.com"), login("member@example.com")
		inviteeTok, staffTok := login("invitee@example.com"), login("staff@example.com")
		c.code("POST", "/v1/session", `{"email":"owner@example.com","password":"wrong password"}`, 401, "unauthorized")
		c.code("POST", "/v1/session", `{"email":1}`, 400, "malformed_json")
		c.code("POST", "/v1/session", `{}`, 415, "unsupported_media_type", plain)
		c.code("POST", "/v1/session", big, 413, "body_too_large")
		for i := 0; ; i++ {
			w := c.do("POST", "/v1/session", `{"email":"locked@example.com","password":"wrong password"}`, func() int {
				if i < 5 {
					return 401
				}
				return 423
			}())
			if w.Code == 423 {
				break
			}
		}
		byeTok := login("owner@example.com")
		c.code("DELETE", "/v1/session", "", 403, "forbidden", oaHeader("Cookie", SessionCookie+"="+byeTok), evil)
		c.do("DELETE", "/v1/session", "", 204, oaBearer(byeTok))
		c.code("DELETE", "/v1/session", "", 401, "unauthorized", oaBearer(byeTok))
		c.code("DELETE", "/v1/session", "", 401, "unauthorized")

		// The caller.
		c.do("GET", "/v1/me", "", 200, oaBearer(ownerTok))
		c.do("GET", "/v1/me", "", 200, oaHeader("Cookie", SessionCookie+"="+ownerTok))
		c.code("GET", "/v1/me", "", 401, "unauthorized", oaBearer("not-a-token"))
		c.do("GET", "/v1/operator/me", "", 200, oaBearer(staffTok))
		c.code("GET", "/v1/operator/me", "", 403, "forbidden", oaBearer(ownerTok))
		c.code("GET", "/v1/operator/me", "", 401, "unauthorized")
		c.do("GET", "/v1/operator/users?query=example&limit=2", "", 200, oaBearer(staffTok))
		c.do("GET", "/v1/operator/users?query=%25%25", "", 200, oaBearer(staffTok))
		c.code("GET", "/v1/operator/users?query=a", "", 422, "validation_failed", oaBearer(staffTok))
		c.code("GET", "/v1/operator/users?query=ab&limit=51", "", 422, "validation_failed", oaBearer(staffTok))
		c.code("GET", "/v1/operator/users?query=ab&limit=abc", "", 422, "validation_failed", oaBearer(staffTok))
		c.code("GET", "/v1/operator/users?query=ab", "", 403, "forbidden", oaBearer(ownerTok))
		c.code("GET", "/v1/operator/users?query=ab", "", 401, "unauthorized")

		// Accounts.
		var personal []struct {
			ID       string
			Personal bool
		}
		c.json("GET", "/v1/accounts", "", 200, &personal, oaBearer(ownerTok))
		c.code("GET", "/v1/accounts", "", 401, "unauthorized")
		c.code("GET", "/v1/accounts?limit=0", "", 422, "validation_failed", oaBearer(ownerTok))
		c.code("GET", "/v1/accounts?cursor=bm90LWEtY3Vyc29y", "", 422, "validation_failed", oaBearer(ownerTok))
		var team struct{ ID string }
		c.json("POST", "/v1/accounts", `{"name":"Acme Tools"}`, 201, &team, oaBearer(ownerTok), oaHeader("Idempotency-Key", "acct-1"))
		c.do("POST", "/v1/accounts", `{"name":"Acme Tools"}`, 201, oaBearer(ownerTok), oaHeader("Idempotency-Key", "acct-1"))
		c.code("POST", "/v1/accounts", `{"name":"Other"}`, 422, "idempotency_key_reused", oaBearer(ownerTok), oaHeader("Idempotency-Key", "acct-1"))
		c.code("POST", "/v1/accounts", `{"name":"Other"}`, 400, "idempotency_key_invalid", oaBearer(ownerTok), oaHeader("Idempotency-Key", "\x7f"))
		claimKey(t, env.DB, "user:"+owner.ID, "acct-busy", "POST", "/v1/accounts", `{"name":"Busy"}`)
		c.code("POST", "/v1/accounts", `{"name":"Busy"}`, 409, "idempotency_key_in_progress", oaBearer(ownerTok), oaHeader("Idempotency-Key", "acct-busy"))
		c.code("POST", "/v1/accounts", `{"name":"ACME  tools"}`, 409, "conflict", oaBearer(ownerTok))
		c.code("POST", "/v1/accounts", `{"name":"   "}`, 422, "validation_failed", oaBearer(ownerTok))
		c.code("POST", "/v1/accounts", `{"name":"x"} {}`, 400, "malformed_json", oaBearer(ownerTok))
		c.code("POST", "/v1/accounts", `{"name":"x"}`, 415, "unsupported_media_type", oaBearer(ownerTok), plain)
		c.code("POST", "/v1/accounts", big, 413, "body_too_large", oaBearer(ownerTok))
		c.code("POST", "/v1/accounts", `{"name":"x"}`, 403, "forbidden", oaHeader("Cookie", SessionCookie+"="+ownerTok), evil)
		c.code("POST", "/v1/accounts", `{"name":"x"}`, 401, "unauthorized")
		acct := "/v1/accounts/" + team.ID
		if link := c.do("GET", "/v1/accounts?limit=1", "", 200, oaBearer(ownerTok)).Header().Get("Link"); link == "" {
			t.Error("accounts?limit=1 of two: no Link to the next page")
		} else {
			next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			c.do("GET", next, "", 200, oaBearer(ownerTok))
		}

		// Invitations: admin and member join the team.
		invite := func(email, role string) string {
			var inv struct{ Token string }
			c.json("POST", acct+"/invitations", `{"email":"`+email+`","role":"`+role+`"}`, 201, &inv, oaBearer(ownerTok))
			return inv.Token
		}
		accept := func(token, callerTok string, status int) {
			c.do("POST", "/v1/invitations/accept", `{"token":"`+token+`"}`, status, oaBearer(callerTok))
		}
		accept(invite("admin@example.com", "admin"), adminTok, 200)
		used := invite("member@example.com", "member")
		accept(used, memberTok, 200)
		c.code("POST", "/v1/invitations/accept", `{"token":"`+used+`"}`, 410, "invitation_used", oaBearer(inviteeTok))
		again := invite("member@example.com", "member")
		c.code("POST", "/v1/invitations/accept", `{"token":"`+again+`"}`, 409, "conflict", oaBearer(memberTok))
		c.code("POST", "/v1/invitations/accept", `{"token":"no-such-token"}`, 404, "not_found", oaBearer(inviteeTok))
		c.code("POST", "/v1/invitations/accept", `{"token":" "}`, 422, "validation_failed", oaBearer(inviteeTok))
		c.code("POST", "/v1/invitations/accept", `{"token":[]}`, 400, "malformed_json", oaBearer(inviteeTok))
		c.code("POST", "/v1/invitations/accept", `{}`, 415, "unsupported_media_type", oaBearer(inviteeTok), plain)
		c.code("POST", "/v1/invitations/accept", big, 413, "body_too_large", oaBearer(inviteeTok))
		c.code("POST", "/v1/invitations/accept", `{"token":"x"}`, 403, "forbidden", oaHeader("Cookie", SessionCookie+"="+inviteeTok), evil)
		c.code("POST", "/v1/invitations/accept", `{"token":"x"}`, 401, "unauthorized")

		inv := acct + "/invitations"
		c.do("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 201, oaBearer(adminTok), oaHeader("Idempotency-Key", "inv-1"))
		c.do("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 201, oaBearer(adminTok), oaHeader("Idempotency-Key", "inv-1"))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"admin"}`, 422, "idempotency_key_reused", oaBearer(adminTok), oaHeader("Idempotency-Key", "inv-1"))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"owner"}`, 422, "validation_failed", oaBearer(adminTok))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 400, "idempotency_key_invalid", oaBearer(adminTok), oaHeader("Idempotency-Key", strings.Repeat("k", 256)))
		admin := env.Principal(t, adminTok, "")
		claimKey(t, env.DB, "user:"+admin.User.ID, "inv-busy", "POST", inv, `{"email":"busy@example.com","role":"member"}`)
		c.code("POST", inv, `{"email":"busy@example.com","role":"member"}`, 409, "idempotency_key_in_progress", oaBearer(adminTok), oaHeader("Idempotency-Key", "inv-busy"))
		c.code("POST", inv, `{"email":"invitee@example.com"`, 400, "malformed_json", oaBearer(adminTok))
		c.code("POST", inv, `{}`, 415, "unsupported_media_type", oaBearer(adminTok), plain)
		c.code("POST", inv, big, 413, "body_too_large", oaBearer(adminTok))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 403, "forbidden", oaBearer(memberTok))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 404, "not_found", oaBearer(inviteeTok))
		c.code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 401, "unauthorized")

		// One account.
		c.do("GET", acct, "", 200, oaBearer(memberTok))
		c.code("GET", acct, "", 404, "not_found", oaBearer(inviteeTok))
		c.code("GET", "/v1/accounts/not-a-uuid", "", 404, "not_found", oaBearer(ownerTok))
		c.code("GET", acct, "", 401, "unauthorized")
		c.do("PATCH", acct, `{"name":"Acme Tooling"}`, 200, oaBearer(adminTok))
		c.code("PATCH", acct, `{"name":""}`, 422, "validation_failed", oaBearer(adminTok))
		c.code("PATCH", acct, `{"name":"x","slug":"y"}`, 400, "malformed_json", oaBearer(adminTok))
		c.code("PATCH", acct, `{"name":"x"}`, 415, "unsupported_media_type", oaBearer(adminTok), plain)
		c.code("PATCH", acct, big, 413, "body_too_large", oaBearer(adminTok))
		c.code("PATCH", acct, `{"name":"x"}`, 403, "forbidden", oaBearer(memberTok))
		c.code("PATCH", acct, `{"name":"x"}`, 404, "not_found", oaBearer(inviteeTok))
		c.code("PATCH", acct, `{"name":"x"}`, 401, "unauthorized")

		// Members.
		c.do("GET", acct+"/members", "", 200, oaBearer(memberTok))
		var page struct {
			Members    []json.RawMessage
			NextCursor *string `json:"next_cursor"`
		}
		c.json("GET", acct+"/members?limit=1", "", 200, &page, oaBearer(memberTok))
		if page.NextCursor == nil {
			t.Fatal("members?limit=1 of three: no next_cursor")
		}
		c.do("GET", acct+"/members?limit=1&cursor="+*page.NextCursor, "", 200, oaBearer(memberTok))
		c.code("GET", acct+"/members?cursor=bm90LWEtY3Vyc29y", "", 422, "validation_failed", oaBearer(memberTok))
		c.code("GET", acct+"/members?limit=201", "", 422, "validation_failed", oaBearer(memberTok))
		c.code("GET", acct+"/members", "", 404, "not_found", oaBearer(inviteeTok))
		c.code("GET", acct+"/members", "", 401, "unauthorized")
		member := env.Principal(t, memberTok, "")
		m := acct + "/members/" + member.User.ID
		o := acct + "/members/" + owner.ID
		a := acct + "/members/" + admin.User.ID
		c.do("PATCH", m, `{"role":"admin"}`, 200, oaBearer(ownerTok))
		c.do("PATCH", m, `{"role":"member"}`, 200, oaBearer(ownerTok))
		c.code("PATCH", o, `{"role":"admin"}`, 422, "validation_failed", oaBearer(ownerTok))
		c.code("PATCH", m, `{"role":"boss"}`, 422, "validation_failed", oaBearer(ownerTok))
		c.code("PATCH", m, `{"role":1}`, 400, "malformed_json", oaBearer(ownerTok))
		c.code("PATCH", m, `{"role":"admin"}`, 415, "unsupported_media_type", oaBearer(ownerTok), plain)
		c.code("PATCH", m, big, 413, "body_too_large", oaBearer(ownerTok))
		c.code("PATCH", m, `{"role":"admin"}`, 403, "forbidden", oaBearer(adminTok))
		c.code("PATCH", acct+"/members/"+owner.ID[:8], `{"role":"admin"}`, 404, "not_found", oaBearer(ownerTok))
		c.code("PATCH", m, `{"role":"admin"}`, 401, "unauthorized")
		c.code("DELETE", o, "", 403, "forbidden", oaBearer(adminTok))
		c.code("DELETE", o, "", 422, "validation_failed", oaBearer(ownerTok))
		c.code("DELETE", acct+"/members/"+env.Principal(t, inviteeTok, "").User.ID, "", 404, "not_found", oaBearer(ownerTok))
		c.code("DELETE", m, "", 401, "unauthorized")
		c.do("DELETE", m, "", 204, oaBearer(adminTok))

		// Deleting accounts.
		c.code("DELETE", "/v1/accounts/"+personal[0].ID, "", 422, "personal_account", oaBearer(ownerTok))
		c.code("DELETE", acct, "", 403, "forbidden", oaBearer(adminTok))
		c.code("DELETE", acct, "", 404, "not_found", oaBearer(memberTok))
		c.code("DELETE", acct, "", 401, "unauthorized")
		c.do("DELETE", a, "", 204, oaBearer(ownerTok))
		c.do("DELETE", acct, "", 204, oaBearer(ownerTok))

		// An invitation accepted after it expired.
		var second struct{ ID string }
		c.json("POST", "/v1/accounts", `{"name":"Second"}`, 201, &second, oaBearer(ownerTok))
		var late struct{ Token string }
		c.json("POST", "/v1/accounts/"+second.ID+"/invitations", `{"email":"late@example.com","role":"member"}`, 201, &late, oaBearer(ownerTok))
		env.Clock.Advance(identity.InvitationTTL + time.Hour)
		c.code("POST", "/v1/invitations/accept", `{"token":"`+late.Token+`"}`, 410, "invitation_expired", oaBearer(login("late@example.com")))

		// Without a database every /v1 route and the key set are 404.
		nodb := newOAClient(t, NewHandler(Deps{Logger: logger}), seen)
		for _, rt := range oaRoutes(team.ID, owner.ID) {
			nodb.code(rt.method, rt.path, rt.body, 404, "not_found", oaBearer(ownerTok))
		}
		nodb.code("GET", "/.well-known/jwks.json", "", 404, "not_found")
		nodb.do("GET", "/readyz", "", 200)

		// With the database gone every /v1 route is a generic 500 and
		// readiness is 503.
		freshTok := login("owner@example.com")
		if err := env.DB.Close(); err != nil {
			t.Fatal(err)
		}
		for _, rt := range oaRoutes(personal[0].ID, owner.ID) {
			c.code(rt.method, rt.path, rt.body, 500, "internal", oaBearer(freshTok))
		}
		c.do("GET", "/readyz", "", 503)

		var missed []string
		for _, r := range c.doc.Responses() {
			if !seen[r] {
				missed = append(missed, r)
			}
		}
		if len(missed) > 0 {
			t.Errorf("declared responses no request produced (exercise them, or remove them from the document):\n\t%s", strings.Join(missed, "\n\t"))
		}
	})
}

type oaRoute struct{ method, path, body string }

// oaRoutes is one valid request per /v1 route.
func oaRoutes(accountID, userID string) []oaRoute {
	acct := "/v1/accounts/" + accountID
	return []oaRoute{
		{"POST", "/v1/users", `{"email":"new@example.com","password":"correct horse battery"}`},
		{"POST", "/v1/session", `{"email":"owner@example.com","password":"correct horse battery"}`},
		{"DELETE", "/v1/session", ""},
		{"GET", "/v1/me", ""},
		{"GET", "/v1/operator/me", ""},
		{"GET", "/v1/operator/users?query=ab", ""},
		{"GET", "/v1/accounts", ""},
		{"POST", "/v1/accounts", `{"name":"Third"}`},
		{"GET", acct, ""},
		{"PATCH", acct, `{"name":"Renamed"}`},
		{"DELETE", acct, ""},
		{"GET", acct + "/members", ""},
		{"PATCH", acct + "/members/" + userID, `{"role":"owner"}`},
		{"DELETE", acct + "/members/" + userID, ""},
		{"POST", acct + "/invitations", `{"email":"x@example.com","role":"member"}`},
		{"POST", "/v1/invitations/accept", `{"token":"abc"}`},
	}
}

// failures is a TB that records what the wrapper reports, to show that
// it does report.
type failures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// TestOpenAPIWrapperCatchesDrift: handlers that answer something the
// document does not declare make the wrapper fail the test, naming the
// problem.
func TestOpenAPIWrapperCatchesDrift(t *testing.T) {
	me := `{"id":"6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d","email":"a@example.com","display_name":"","staff":false,"created_at":"2026-01-02T03:04:05Z"}`
	for _, tc := range []struct {
		name    string
		status  int
		ctype   string
		body    string
		request string // path; GET /v1/me when empty
		want    string
	}{
		{"ExtraField", 200, "application/json", strings.TrimSuffix(me, "}") + `,"password_hash":"x"}`, "", "password_hash"},
		{"MissingField", 200, "application/json", strings.Replace(me, `"staff":false,`, "", 1), "", "staff"},
		{"WrongType", 200, "application/json", strings.Replace(me, `"staff":false`, `"staff":"no"`, 1), "", "staff"},
		{"UndeclaredStatus", 418, "application/json", `{}`, "", "418"},
		{"UndeclaredContentType", 200, "text/plain", "hello", "", "text/plain"},
		{"UndeclaredProblemCode", 401, "application/problem+json", `{"type":"about:blank","status":401,"title":"Unauthorized","detail":"x","code":"nope","trace_id":"0123456789abcdef0123456789abcdef"}`, "", "code"},
		{"BodyOnNoContent", 204, "application/json", `{}`, "/v1/session", "declared without content"},
		{"UnmatchedStatus", 405, "application/problem+json", `{}`, "/nope", "x-unmatched-responses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			path := tc.request
			if path == "/v1/session" {
				method = "DELETE"
			}
			if path == "" {
				path = "/v1/me"
			}
			bad := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.Header().Set("Set-Cookie", SessionCookie+"=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax")
				w.Header().Set("WWW-Authenticate", `Bearer realm="identity"`)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			f := &failures{}
			r := httptest.NewRequest(method, path, nil)
			r.Header.Set("Authorization", "Bearer x.y.z")
			openapitest.Wrap(f, OpenAPI(), bad).ServeHTTP(httptest.NewRecorder(), r)
			if len(f.msgs) == 0 {
				t.Fatalf("the wrapper reported nothing")
			}
			t.Logf("reported:\n%s", strings.Join(f.msgs, "\n"))
			if !strings.Contains(strings.Join(f.msgs, "\n"), tc.want) {
				t.Errorf("report does not mention %q:\n%s", tc.want, strings.Join(f.msgs, "\n"))
			}
		})
	}

	t.Run("AcceptedInvalidRequest", func(t *testing.T) {
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":"6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d","email":"a@example.com"}`)
		})
		f := &failures{}
		r := httptest.NewRequest("POST", "/v1/users", strings.NewReader(`{"email":"a@example.com","password":"correct horse","admin":true}`))
		r.Header.Set("Content-Type", "application/json")
		openapitest.Wrap(f, OpenAPI(), ok).ServeHTTP(httptest.NewRecorder(), r)
		if !strings.Contains(strings.Join(f.msgs, "\n"), "accepted a request the document refuses") {
			t.Errorf("want a report of the accepted invalid request, got %q", f.msgs)
		}
	})

	t.Run("ConformingHandlerPasses", func(t *testing.T) {
		good := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, me)
		})
		f := &failures{}
		r := httptest.NewRequest("GET", "/v1/me", nil)
		r.Header.Set("Authorization", "Bearer x.y.z")
		openapitest.Wrap(f, OpenAPI(), good).ServeHTTP(httptest.NewRecorder(), r)
		if len(f.msgs) != 0 {
			t.Errorf("a conforming answer was reported: %q", f.msgs)
		}
	})
}
