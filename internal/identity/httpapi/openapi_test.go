package httpapi

// These tests hold identity's OpenAPI document to the code: it is valid
// OpenAPI 3.1, it names exactly the routes routes.go registers, and every
// response it declares is produced by the real handlers over a real
// database and validated against it (openapitest.Wrap). The white-box
// package keeps these helpers apart from the black-box suite's.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
	openapitest.CheckRoutes(t, OpenAPI(), src, 18)
}

// TestOpenAPIServed: /openapi.json answers the embedded document, with or
// without a database.
func TestOpenAPIServed(t *testing.T) {
	c := openapitest.NewClient(t, OpenAPI(), NewServer(Deps{Logger: slog.New(slog.DiscardHandler)}), nil)
	res := c.Do("GET", "/openapi.json", "", 200)
	if got := res.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if res.Body.String() != string(OpenAPI()) {
		t.Error("GET /openapi.json does not answer the embedded document")
	}
}

// claimKey records an unfinished Idempotency-Key claim, as a request
// still being processed leaves it, so the next request with the key is
// told so; caller "" is a route without one.
func claimKey(t *testing.T, db *sqldb.DB, caller, key, method, path, body string) {
	t.Helper()
	if err := idempotency.New(db, make([]byte, idempotency.SecretSize)).Hold(context.Background(), caller, key, method, path, []byte(body)); err != nil {
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
		logger := slog.New(slog.DiscardHandler)
		seen := &openapitest.Coverage{}
		c := openapitest.NewClient(t, OpenAPI(), NewServer(Deps{
			Service:     env.Service,
			OIDCStore:   env.Store,
			Idempotency: idempotency.New(env.DB, make([]byte, idempotency.SecretSize)),
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
		plain := openapitest.Header("Content-Type", "text/plain")
		evil := openapitest.Header("Origin", "https://evil.example")

		// Probes and documents.
		c.Do("GET", "/healthz", "", 200)
		c.Do("GET", "/readyz", "", 200)
		c.Do("GET", "/openapi.json", "", 200)
		c.Do("GET", "/.well-known/jwks.json", "", 200)
		c.Code("GET", "/no/such/route", "", 404, "not_found")
		if got := c.Code("PUT", "/v1/users", `{}`, 405, "method_not_allowed").Header().Get("Allow"); got != "POST" {
			t.Errorf("PUT /v1/users: Allow = %q, want POST", got)
		}
		if got := c.Code("PUT", "/v1/accounts/"+uuidZero, `{}`, 405, "method_not_allowed").Header().Get("Allow"); got != "GET, HEAD, PATCH, DELETE" {
			t.Errorf("PUT /v1/accounts/{id}: Allow = %q, want GET, HEAD, PATCH, DELETE", got)
		}

		// Registration.
		var owner struct{ ID, Email string }
		c.JSON("POST", "/v1/users", `{"email":"Owner@Example.com",`+pw+`,"display_name":"Olive"}`, 201, &owner, openapitest.Header("Idempotency-Key", "reg-1"))
		c.Do("POST", "/v1/users", `{"email":"Owner@Example.com",`+pw+`,"display_name":"Olive"}`, 201, openapitest.Header("Idempotency-Key", "reg-1"))
		// Without a caller, a record is found by key and body together:
		// another body under the key is another request.
		if w := c.Do("POST", "/v1/users", `{"email":"other@example.com",`+pw+`}`, 201, openapitest.Header("Idempotency-Key", "reg-1")); w.Header().Get("Idempotent-Replayed") != "" {
			t.Error("another body under a public key was answered with the first request's replay")
		}
		c.Code("POST", "/v1/users", `{"email":"x@example.com",`+pw+`}`, 400, "idempotency_key_invalid", openapitest.Header("Idempotency-Key", "has space"))
		claimKey(t, env.DB, "", "reg-busy", "POST", "/v1/users", `{"email":"busy@example.com",`+pw+`}`)
		c.Code("POST", "/v1/users", `{"email":"busy@example.com",`+pw+`}`, 409, "idempotency_key_in_progress", openapitest.Header("Idempotency-Key", "reg-busy"))
		c.Code("POST", "/v1/users", `{"email":"owner@example.com",`+pw+`}`, 409, "conflict")
		c.Code("POST", "/v1/users", `{"email":"nope","password":"short"}`, 422, "validation_failed")
		c.Code("POST", "/v1/users", `{"email":"a@example.com",`+pw+`,"admin":true}`, 400, "malformed_json")
		c.Code("POST", "/v1/users", `{"email":"a@example.com",`+pw+`}`, 415, "unsupported_media_type", plain)
		c.Code("POST", "/v1/users", big, 413, "body_too_large")
		for _, email := range []string{"admin@example.com", "member@example.com", "invitee@example.com", "staff@example.com", "locked@example.com", "late@example.com"} {
			c.Do("POST", "/v1/users", `{"email":"`+email+`",`+pw+`}`, 201)
		}
		// Only a verified holder of the invited address accepts.
		for _, email := range []string{"admin@example.com", "member@example.com"} {
			c.Do("POST", "/v1/email/verify", `{"token":"`+env.LinkToken(t, email, identity.TemplateVerifyEmail)+`"}`, 200)
		}
		if err := env.Service.SetStaff(context.Background(), "staff@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}

		// Sessions.
		login := func(email string) string {
			var s struct{ Token string }
			c.JSON("POST", "/v1/session", `{"email":"`+email+`",`+pw+`}`, 201, &s)
			return s.Token
		}
		ownerTok, adminTok, memberTok := login("owner@example.com"), login("admin@example.com"), login("member@example.com")
		inviteeTok, staffTok := login("invitee@example.com"), login("staff@example.com")
		c.Code("POST", "/v1/session", `{"email":"owner@example.com","password":"wrong password"}`, 401, "unauthorized")
		c.Code("POST", "/v1/session", `{"email":1}`, 400, "malformed_json")
		c.Code("POST", "/v1/session", `{}`, 415, "unsupported_media_type", plain)
		c.Code("POST", "/v1/session", big, 413, "body_too_large")
		for i := 0; ; i++ {
			w := c.Do("POST", "/v1/session", `{"email":"locked@example.com","password":"wrong password"}`, func() int {
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
		c.Code("DELETE", "/v1/session", "", 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+byeTok), evil)
		c.Do("DELETE", "/v1/session", "", 204, openapitest.Bearer(byeTok))
		c.Code("DELETE", "/v1/session", "", 401, "unauthorized", openapitest.Bearer(byeTok))
		c.Code("DELETE", "/v1/session", "", 401, "unauthorized")

		// The caller.
		c.Do("GET", "/v1/me", "", 200, openapitest.Bearer(ownerTok))
		c.Do("GET", "/v1/me", "", 200, openapitest.Header("Cookie", SessionCookie+"="+ownerTok))
		c.Code("GET", "/v1/me", "", 401, "unauthorized", openapitest.Bearer("not-a-token"))
		avatar := `{"avatar_media_id":"` + uuidZero + `"}`
		c.Do("PATCH", "/v1/me", avatar, 200, openapitest.Bearer(ownerTok))
		c.Do("PATCH", "/v1/me", `{"avatar_media_id":null}`, 200, openapitest.Bearer(ownerTok))
		c.Code("PATCH", "/v1/me", `{"avatar_media_id":"not-an-id"}`, 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("PATCH", "/v1/me", `{"avatar_media_id":null,"staff":true}`, 400, "malformed_json", openapitest.Bearer(ownerTok))
		c.Code("PATCH", "/v1/me", avatar, 415, "unsupported_media_type", openapitest.Bearer(ownerTok), plain)
		c.Code("PATCH", "/v1/me", big, 413, "body_too_large", openapitest.Bearer(ownerTok))
		c.Code("PATCH", "/v1/me", avatar, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+ownerTok), evil)
		c.Code("PATCH", "/v1/me", avatar, 401, "unauthorized")
		c.Do("GET", "/v1/operator/me", "", 200, openapitest.Bearer(staffTok))
		c.Code("GET", "/v1/operator/me", "", 403, "forbidden", openapitest.Bearer(ownerTok))
		c.Code("GET", "/v1/operator/me", "", 401, "unauthorized")
		c.Do("GET", "/v1/operator/users?query=example&limit=2", "", 200, openapitest.Bearer(staffTok))
		c.Do("GET", "/v1/operator/users?query=%25%25", "", 200, openapitest.Bearer(staffTok))
		c.Code("GET", "/v1/operator/users?query=a", "", 422, "validation_failed", openapitest.Bearer(staffTok))
		c.Code("GET", "/v1/operator/users?query=ab&limit=51", "", 422, "validation_failed", openapitest.Bearer(staffTok))
		c.Code("GET", "/v1/operator/users?query=ab&limit=abc", "", 422, "validation_failed", openapitest.Bearer(staffTok))
		c.Code("GET", "/v1/operator/users?query=ab", "", 403, "forbidden", openapitest.Bearer(ownerTok))
		c.Code("GET", "/v1/operator/users?query=ab", "", 401, "unauthorized")

		// Accounts.
		var personal []struct {
			ID       string
			Personal bool
		}
		c.JSON("GET", "/v1/accounts", "", 200, &personal, openapitest.Bearer(ownerTok))
		c.Code("GET", "/v1/accounts", "", 401, "unauthorized")
		c.Code("GET", "/v1/accounts?limit=0", "", 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("GET", "/v1/accounts?cursor=bm90LWEtY3Vyc29y", "", 422, "validation_failed", openapitest.Bearer(ownerTok))
		var team struct{ ID string }
		c.JSON("POST", "/v1/accounts", `{"name":"Acme Tools"}`, 201, &team, openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "acct-1"))
		c.Do("POST", "/v1/accounts", `{"name":"Acme Tools"}`, 201, openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "acct-1"))
		c.Code("POST", "/v1/accounts", `{"name":"Other"}`, 422, "idempotency_key_reused", openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "acct-1"))
		c.Code("POST", "/v1/accounts", `{"name":"Other"}`, 400, "idempotency_key_invalid", openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "\x7f"))
		claimKey(t, env.DB, "user:"+owner.ID, "acct-busy", "POST", "/v1/accounts", `{"name":"Busy"}`)
		c.Code("POST", "/v1/accounts", `{"name":"Busy"}`, 409, "idempotency_key_in_progress", openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "acct-busy"))
		c.Code("POST", "/v1/accounts", `{"name":"ACME  tools"}`, 409, "conflict", openapitest.Bearer(ownerTok))
		c.Code("POST", "/v1/accounts", `{"name":"   "}`, 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("POST", "/v1/accounts", `{"name":"x"} {}`, 400, "malformed_json", openapitest.Bearer(ownerTok))
		c.Code("POST", "/v1/accounts", `{"name":"x"}`, 415, "unsupported_media_type", openapitest.Bearer(ownerTok), plain)
		c.Code("POST", "/v1/accounts", big, 413, "body_too_large", openapitest.Bearer(ownerTok))
		c.Code("POST", "/v1/accounts", `{"name":"x"}`, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+ownerTok), evil)
		c.Code("POST", "/v1/accounts", `{"name":"x"}`, 401, "unauthorized")
		acct := "/v1/accounts/" + team.ID
		if link := c.Do("GET", "/v1/accounts?limit=1", "", 200, openapitest.Bearer(ownerTok)).Header().Get("Link"); link == "" {
			t.Error("accounts?limit=1 of two: no Link to the next page")
		} else {
			next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			c.Do("GET", next, "", 200, openapitest.Bearer(ownerTok))
		}

		// Invitations: admin and member join the team.
		invite := func(email, role string) string {
			var inv struct{ Token string }
			c.JSON("POST", acct+"/invitations", `{"email":"`+email+`","role":"`+role+`"}`, 201, &inv, openapitest.Bearer(ownerTok))
			return inv.Token
		}
		accept := func(token, callerTok string, status int) {
			c.Do("POST", "/v1/invitations/accept", `{"token":"`+token+`"}`, status, openapitest.Bearer(callerTok))
		}
		accept(invite("admin@example.com", "admin"), adminTok, 200)
		used := invite("member@example.com", "member")
		accept(used, memberTok, 200)
		c.Code("POST", "/v1/invitations/accept", `{"token":"`+used+`"}`, 410, "invitation_used", openapitest.Bearer(inviteeTok))
		again := invite("member@example.com", "member")
		c.Code("POST", "/v1/invitations/accept", `{"token":"`+again+`"}`, 409, "conflict", openapitest.Bearer(memberTok))
		c.Code("POST", "/v1/invitations/accept", `{"token":"no-such-token"}`, 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("POST", "/v1/invitations/accept", `{"token":" "}`, 422, "validation_failed", openapitest.Bearer(inviteeTok))
		c.Code("POST", "/v1/invitations/accept", `{"token":[]}`, 400, "malformed_json", openapitest.Bearer(inviteeTok))
		c.Code("POST", "/v1/invitations/accept", `{}`, 415, "unsupported_media_type", openapitest.Bearer(inviteeTok), plain)
		c.Code("POST", "/v1/invitations/accept", big, 413, "body_too_large", openapitest.Bearer(inviteeTok))
		c.Code("POST", "/v1/invitations/accept", `{"token":"x"}`, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+inviteeTok), evil)
		c.Code("POST", "/v1/invitations/accept", `{"token":"x"}`, 401, "unauthorized")

		inv := acct + "/invitations"
		c.Do("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 201, openapitest.Bearer(adminTok), openapitest.Header("Idempotency-Key", "inv-1"))
		c.Do("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 201, openapitest.Bearer(adminTok), openapitest.Header("Idempotency-Key", "inv-1"))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"admin"}`, 422, "idempotency_key_reused", openapitest.Bearer(adminTok), openapitest.Header("Idempotency-Key", "inv-1"))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"owner"}`, 422, "validation_failed", openapitest.Bearer(adminTok))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 400, "idempotency_key_invalid", openapitest.Bearer(adminTok), openapitest.Header("Idempotency-Key", strings.Repeat("k", 256)))
		admin := env.Principal(t, adminTok, "")
		claimKey(t, env.DB, "user:"+admin.User.ID, "inv-busy", "POST", inv, `{"email":"busy@example.com","role":"member"}`)
		c.Code("POST", inv, `{"email":"busy@example.com","role":"member"}`, 409, "idempotency_key_in_progress", openapitest.Bearer(adminTok), openapitest.Header("Idempotency-Key", "inv-busy"))
		c.Code("POST", inv, `{"email":"invitee@example.com"`, 400, "malformed_json", openapitest.Bearer(adminTok))
		c.Code("POST", inv, `{}`, 415, "unsupported_media_type", openapitest.Bearer(adminTok), plain)
		c.Code("POST", inv, big, 413, "body_too_large", openapitest.Bearer(adminTok))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 403, "forbidden", openapitest.Bearer(memberTok))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("POST", inv, `{"email":"invitee@example.com","role":"member"}`, 401, "unauthorized")

		// One account.
		c.Do("GET", acct, "", 200, openapitest.Bearer(memberTok))
		c.Code("GET", acct, "", 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("GET", "/v1/accounts/not-a-uuid", "", 404, "not_found", openapitest.Bearer(ownerTok))
		c.Code("GET", acct, "", 401, "unauthorized")
		c.Do("PATCH", acct, `{"name":"Acme Tooling"}`, 200, openapitest.Bearer(adminTok))
		c.Do("POST", "/v1/accounts", `{"name":"Rival Co"}`, 201, openapitest.Bearer(ownerTok))
		c.Code("PATCH", acct, `{"name":"rival co"}`, 409, "conflict", openapitest.Bearer(adminTok))
		c.Code("PATCH", acct, `{"name":""}`, 422, "validation_failed", openapitest.Bearer(adminTok))
		c.Code("PATCH", acct, `{"name":"x","slug":"y"}`, 400, "malformed_json", openapitest.Bearer(adminTok))
		c.Code("PATCH", acct, `{"name":"x"}`, 415, "unsupported_media_type", openapitest.Bearer(adminTok), plain)
		c.Code("PATCH", acct, big, 413, "body_too_large", openapitest.Bearer(adminTok))
		c.Code("PATCH", acct, `{"name":"x"}`, 403, "forbidden", openapitest.Bearer(memberTok))
		c.Code("PATCH", acct, `{"name":"x"}`, 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("PATCH", acct, `{"name":"x"}`, 401, "unauthorized")

		// Open invitations: list, resend, decline, revoke.
		c.Do("GET", inv, "", 200, openapitest.Bearer(adminTok))
		var invPage struct {
			Invitations []json.RawMessage
			NextCursor  *string `json:"next_cursor"`
		}
		c.JSON("GET", inv+"?limit=1", "", 200, &invPage, openapitest.Bearer(adminTok))
		if invPage.NextCursor == nil {
			t.Fatal("invitations?limit=1 of two: no next_cursor")
		}
		c.Do("GET", inv+"?limit=1&cursor="+*invPage.NextCursor, "", 200, openapitest.Bearer(adminTok))
		c.Code("GET", inv+"?cursor=bm90LWEtY3Vyc29y", "", 422, "validation_failed", openapitest.Bearer(adminTok))
		c.Code("GET", inv, "", 403, "forbidden", openapitest.Bearer(memberTok))
		c.Code("GET", inv, "", 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("GET", inv, "", 401, "unauthorized")
		var fresh, resent struct{ ID, Token string }
		c.JSON("POST", inv, `{"email":"fresh@example.com","role":"member"}`, 201, &fresh, openapitest.Bearer(ownerTok))
		c.JSON("POST", inv+"/"+fresh.ID+"/resend", "", 200, &resent, openapitest.Bearer(adminTok))
		c.Code("POST", inv+"/"+fresh.ID+"/resend", "", 403, "forbidden", openapitest.Bearer(memberTok))
		c.Code("POST", inv+"/not-a-uuid/resend", "", 404, "not_found", openapitest.Bearer(adminTok))
		c.Code("POST", inv+"/"+fresh.ID+"/resend", "", 401, "unauthorized")
		c.Code("POST", "/v1/invitations/accept", `{"token":"`+fresh.Token+`"}`, 404, "not_found", openapitest.Bearer(inviteeTok))
		preview := "/v1/invitations/preview"
		var pv struct {
			Invitation struct {
				AccountName  string `json:"account_name"`
				Role         string `json:"role"`
				Email        string `json:"email"`
				InviterEmail string `json:"inviter_email"`
			} `json:"invitation"`
		}
		c.JSON("POST", preview, `{"token":"`+resent.Token+`"}`, 200, &pv)
		if pv.Invitation.Email != "fresh@example.com" || pv.Invitation.Role != "member" || pv.Invitation.AccountName == "" || pv.Invitation.InviterEmail == "" {
			t.Errorf("preview = %+v", pv.Invitation)
		}
		c.Code("POST", preview, `{"token":"`+fresh.Token+`"}`, 404, "not_found")
		c.Code("POST", preview, `{"token":" "}`, 422, "validation_failed")
		c.Code("POST", preview, `{"token":[]}`, 400, "malformed_json")
		c.Code("POST", preview, `{}`, 415, "unsupported_media_type", plain)
		c.Code("POST", preview, big, 413, "body_too_large")
		decline := "/v1/invitations/decline"
		c.Code("POST", decline, `{"token":"`+resent.Token+`"}`, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+inviteeTok), evil)
		c.Do("POST", decline, `{"token":"`+resent.Token+`"}`, 204, openapitest.Bearer(inviteeTok))
		c.Code("POST", decline, `{"token":"`+resent.Token+`"}`, 410, "invitation_used", openapitest.Bearer(inviteeTok))
		c.Code("POST", preview, `{"token":"`+resent.Token+`"}`, 410, "invitation_used")
		c.Code("POST", decline, `{"token":"`+fresh.Token+`"}`, 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("POST", decline, `{"token":" "}`, 422, "validation_failed", openapitest.Bearer(inviteeTok))
		c.Code("POST", decline, `{"token":[]}`, 400, "malformed_json", openapitest.Bearer(inviteeTok))
		c.Code("POST", decline, `{}`, 415, "unsupported_media_type", openapitest.Bearer(inviteeTok), plain)
		c.Code("POST", decline, big, 413, "body_too_large", openapitest.Bearer(inviteeTok))
		c.Code("POST", decline, `{"token":"x"}`, 401, "unauthorized")
		var doomed struct{ ID string }
		c.JSON("POST", inv, `{"email":"doomed@example.com","role":"admin"}`, 201, &doomed, openapitest.Bearer(ownerTok))
		c.Code("DELETE", inv+"/"+doomed.ID, "", 403, "forbidden", openapitest.Bearer(memberTok))
		c.Code("DELETE", inv+"/"+doomed.ID, "", 401, "unauthorized")
		c.Do("DELETE", inv+"/"+doomed.ID, "", 204, openapitest.Bearer(adminTok))
		c.Code("DELETE", inv+"/"+doomed.ID, "", 404, "not_found", openapitest.Bearer(adminTok))
		c.Code("POST", inv+"/"+doomed.ID+"/resend", "", 404, "not_found", openapitest.Bearer(adminTok))

		// The caller's sessions and password.
		c.Do("POST", "/v1/users", `{"email":"roamer@example.com",`+pw+`}`, 201)
		roamA, roamB := login("roamer@example.com"), login("roamer@example.com")
		c.Do("GET", "/v1/me/mfa", "", 200, openapitest.Bearer(roamA))
		c.Code("GET", "/v1/me/mfa", "", 401, "unauthorized")
		c.Do("GET", "/v1/me/sessions", "", 200, openapitest.Bearer(roamA))
		c.Code("GET", "/v1/me/sessions", "", 401, "unauthorized")
		c.Code("DELETE", "/v1/me/sessions", "", 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+roamB), evil)
		c.Code("DELETE", "/v1/me/sessions", "", 401, "unauthorized")
		var roamList struct {
			Sessions []struct {
				ID      string `json:"id"`
				Current bool   `json:"current"`
			} `json:"sessions"`
		}
		roamC := login("roamer@example.com")
		c.JSON("GET", "/v1/me/sessions", "", 200, &roamList, openapitest.Bearer(roamC))
		for _, s := range roamList.Sessions {
			if s.Current {
				c.Code("DELETE", "/v1/me/sessions/"+s.ID, "", 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+roamC), evil)
				c.Code("DELETE", "/v1/me/sessions/"+s.ID, "", 401, "unauthorized")
				c.Do("DELETE", "/v1/me/sessions/"+s.ID, "", 204, openapitest.Bearer(roamC))
				c.Code("DELETE", "/v1/me/sessions/"+s.ID, "", 404, "not_found", openapitest.Bearer(roamB))
			}
		}
		c.Do("DELETE", "/v1/me/sessions", "", 204, openapitest.Bearer(roamB))
		c.Code("GET", "/v1/me", "", 401, "unauthorized", openapitest.Bearer(roamA))
		pwPath := "/v1/me/password"
		c.Do("POST", pwPath, `{"current_password":"correct horse battery","new_password":"another horse battery"}`, 204, openapitest.Bearer(roamB))
		c.Code("POST", pwPath, `{"current_password":"another horse battery","new_password":"short"}`, 422, "validation_failed", openapitest.Bearer(roamB))
		c.Code("POST", pwPath, `{"current_password":"x","new_password":"y","admin":true}`, 400, "malformed_json", openapitest.Bearer(roamB))
		c.Code("POST", pwPath, `{}`, 415, "unsupported_media_type", openapitest.Bearer(roamB), plain)
		c.Code("POST", pwPath, big, 413, "body_too_large", openapitest.Bearer(roamB))
		c.Code("POST", pwPath, `{"current_password":"x","new_password":"yyyyyyyy"}`, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+roamB), evil)
		c.Code("POST", pwPath, `{"current_password":"x","new_password":"yyyyyyyy"}`, 401, "unauthorized")
		for i := 0; ; i++ {
			status := 403
			if i >= 5 {
				status = 423
			}
			if w := c.Do("POST", pwPath, `{"current_password":"wrong password","new_password":"yyyyyyyy"}`, status, openapitest.Bearer(roamB)); w.Code == 423 {
				break
			}
		}

		// Members.
		c.Do("GET", acct+"/members", "", 200, openapitest.Bearer(memberTok))
		var page struct {
			Members    []json.RawMessage
			NextCursor *string `json:"next_cursor"`
		}
		c.JSON("GET", acct+"/members?limit=1", "", 200, &page, openapitest.Bearer(memberTok))
		if page.NextCursor == nil {
			t.Fatal("members?limit=1 of three: no next_cursor")
		}
		c.Do("GET", acct+"/members?limit=1&cursor="+*page.NextCursor, "", 200, openapitest.Bearer(memberTok))
		c.Code("GET", acct+"/members?cursor=bm90LWEtY3Vyc29y", "", 422, "validation_failed", openapitest.Bearer(memberTok))
		c.Code("GET", acct+"/members?limit=201", "", 422, "validation_failed", openapitest.Bearer(memberTok))
		c.Code("GET", acct+"/members", "", 404, "not_found", openapitest.Bearer(inviteeTok))
		c.Code("GET", acct+"/members", "", 401, "unauthorized")
		exerciseOIDCClients(t, c, env.DB, owner.ID, acct, "/v1/accounts/"+personal[0].ID, ownerTok, memberTok, big, plain)
		exerciseOIDCConsents(t, c, env, team.ID, ownerTok, evil)
		exerciseStaffAccounts(t, c, acct, staffTok, ownerTok)
		member := env.Principal(t, memberTok, "")
		m := acct + "/members/" + member.User.ID
		o := acct + "/members/" + owner.ID
		a := acct + "/members/" + admin.User.ID
		c.Do("PATCH", m, `{"role":"admin"}`, 200, openapitest.Bearer(ownerTok))
		c.Do("PATCH", m, `{"role":"member"}`, 200, openapitest.Bearer(ownerTok))
		c.Code("PATCH", o, `{"role":"admin"}`, 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("PATCH", m, `{"role":"boss"}`, 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("PATCH", m, `{"role":1}`, 400, "malformed_json", openapitest.Bearer(ownerTok))
		c.Code("PATCH", m, `{"role":"admin"}`, 415, "unsupported_media_type", openapitest.Bearer(ownerTok), plain)
		c.Code("PATCH", m, big, 413, "body_too_large", openapitest.Bearer(ownerTok))
		c.Code("PATCH", m, `{"role":"admin"}`, 403, "forbidden", openapitest.Bearer(adminTok))
		c.Code("PATCH", acct+"/members/"+owner.ID[:8], `{"role":"admin"}`, 404, "not_found", openapitest.Bearer(ownerTok))
		c.Code("PATCH", m, `{"role":"admin"}`, 401, "unauthorized")
		c.Code("DELETE", o, "", 403, "forbidden", openapitest.Bearer(adminTok))
		c.Code("DELETE", o, "", 422, "validation_failed", openapitest.Bearer(ownerTok))
		c.Code("DELETE", acct+"/members/"+env.Principal(t, inviteeTok, "").User.ID, "", 404, "not_found", openapitest.Bearer(ownerTok))
		c.Code("DELETE", m, "", 401, "unauthorized")
		c.Do("DELETE", m, "", 204, openapitest.Bearer(adminTok))

		// Deleting accounts.
		c.Code("DELETE", "/v1/accounts/"+personal[0].ID, "", 422, "personal_account", openapitest.Bearer(ownerTok))
		c.Code("DELETE", acct, "", 403, "forbidden", openapitest.Bearer(adminTok))
		c.Code("DELETE", acct, "", 404, "not_found", openapitest.Bearer(memberTok))
		c.Code("DELETE", acct, "", 401, "unauthorized")
		c.Do("DELETE", a, "", 204, openapitest.Bearer(ownerTok))
		c.Do("DELETE", acct, "", 204, openapitest.Bearer(ownerTok))

		// An invitation accepted after it expired.
		var second struct{ ID string }
		c.JSON("POST", "/v1/accounts", `{"name":"Second"}`, 201, &second, openapitest.Bearer(ownerTok))
		var late struct{ Token string }
		c.JSON("POST", "/v1/accounts/"+second.ID+"/invitations", `{"email":"late@example.com","role":"member"}`, 201, &late, openapitest.Bearer(ownerTok))
		env.Clock.Advance(identity.InvitationTTL + time.Hour)
		c.Code("POST", "/v1/invitations/accept", `{"token":"`+late.Token+`"}`, 410, "invitation_expired", openapitest.Bearer(login("late@example.com")))

		// The credential lifecycle (the clock is now past every link issued
		// at registration).
		lifecycleConformance(t, c, env, login)
		exerciseMFAAndKeys(t, c, env, login("owner@example.com"))
		exerciseStaffKeys(t, c, login("staff@example.com"), login("owner@example.com"))

		// Without a database every /v1 route and the key set are 404.
		nodb := openapitest.NewClient(t, OpenAPI(), NewServer(Deps{Logger: logger}), seen)
		for _, rt := range oaRoutes(team.ID, owner.ID) {
			nodb.Code(rt.method, rt.path, rt.body, 404, "not_found", openapitest.Bearer(ownerTok))
		}
		nodb.Code("GET", "/.well-known/jwks.json", "", 404, "not_found")
		nodb.Do("GET", "/readyz", "", 200)

		// With the database gone every /v1 route is a generic 500 and
		// readiness is 503.
		freshTok := login("owner@example.com")
		if err := env.DB.Close(); err != nil {
			t.Fatal(err)
		}
		for _, rt := range oaRoutes(personal[0].ID, owner.ID) {
			c.Code(rt.method, rt.path, rt.body, 500, "internal", openapitest.Bearer(freshTok))
		}
		c.Do("GET", "/readyz", "", 503)

		c.CheckCoverage()
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
		{"PATCH", "/v1/me", `{"avatar_media_id":null}`},
		{"GET", "/v1/operator/me", ""},
		{"GET", "/v1/operator/users?query=ab", ""},
		{"GET", "/v1/operator/accounts", ""},
		{"GET", "/v1/operator/staff-changes", ""},
		{"GET", "/v1/operator/accounts/" + accountID, ""},
		{"GET", "/v1/operator/accounts/" + accountID + "/members", ""},
		{"GET", "/v1/operator/api_keys", ""},
		{"POST", "/v1/operator/api_keys", `{"name":"ci","account_id":"` + accountID + `"}`},
		{"DELETE", "/v1/operator/api_keys/" + userID, ""},
		{"GET", "/v1/operator/publisher", ""},
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
		{"GET", "/v1/me/sessions", ""},
		{"DELETE", "/v1/me/sessions", ""},
		{"DELETE", "/v1/me/sessions/" + userID, ""},
		{"POST", "/v1/me/password", `{"current_password":"correct horse battery","new_password":"another horse battery"}`},
		{"GET", acct + "/invitations", ""},
		{"DELETE", acct + "/invitations/" + userID, ""},
		{"POST", acct + "/invitations/" + userID + "/resend", ""},
		{"POST", "/v1/invitations/decline", `{"token":"abc"}`},
		{"POST", "/v1/invitations/preview", `{"token":"abc"}`},
		{"POST", "/v1/email/verify", `{"token":"abc"}`},
		{"POST", "/v1/me/email/verification", ""},
		{"POST", "/v1/password/reset", `{"email":"owner@example.com"}`},
		{"POST", "/v1/password/reset/confirm", `{"token":"abc","password":"another horse battery"}`},
		{"POST", "/v1/me/email", `{"email":"moved@example.com","password":"correct horse battery"}`},
		{"POST", "/v1/email/change/confirm", `{"token":"abc"}`},
		{"POST", "/v1/session/mfa", `{"challenge":"abc","code":"123456"}`},
		{"GET", "/v1/me/mfa", ""},
		{"POST", "/v1/me/mfa/totp", `{"password":"correct horse battery"}`},
		{"POST", "/v1/me/mfa/totp/confirm", `{"code":"123456"}`},
		{"DELETE", "/v1/me/mfa/totp", `{"code":"123456"}`},
		{"POST", "/v1/me/mfa/recovery_codes", `{"code":"123456"}`},
		{"GET", acct + "/api_keys", ""},
		{"POST", acct + "/api_keys", `{"name":"ci","scopes":["artifacts:fetch"]}`},
		{"DELETE", acct + "/api_keys/" + userID, ""},
		{"GET", acct + "/oidc_clients", ""},
		{"POST", acct + "/oidc_clients", `{"name":"Shop","redirect_uris":["https://shop.example/cb"]}`},
		{"DELETE", acct + "/oidc_clients/" + userID, ""},
		{"GET", "/v1/me/oidc_consents", ""},
		{"DELETE", "/v1/me/oidc_consents/" + userID, ""},
	}
}

// TestOpenAPIWrapperCatchesDrift: handlers that answer something the
// document does not declare make the wrapper fail the test, naming the
// problem.
func TestOpenAPIWrapperCatchesDrift(t *testing.T) {
	me := `{"id":"6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d","email":"a@example.com","display_name":"","staff":false,"created_at":"2026-01-02T03:04:05Z","email_verified":false,"email_verified_at":null,"avatar_media_id":null}`
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
		{"UnmatchedStatus", 409, "application/problem+json", `{}`, "/nope", "x-unmatched-responses"},
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
			r := httptest.NewRequest(method, path, nil)
			r.Header.Set("Authorization", "Bearer x.y.z")
			openapitest.ExpectReport(t, OpenAPI(), bad, r, tc.want)
		})
	}

	t.Run("AcceptedInvalidRequest", func(t *testing.T) {
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":"6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d","email":"a@example.com"}`)
		})
		r := httptest.NewRequest("POST", "/v1/users", strings.NewReader(`{"email":"a@example.com","password":"correct horse","admin":true}`))
		r.Header.Set("Content-Type", "application/json")
		openapitest.ExpectReport(t, OpenAPI(), ok, r, "accepted a request the document refuses")
	})

	t.Run("ConformingHandlerPasses", func(t *testing.T) {
		good := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, me)
		})
		r := httptest.NewRequest("GET", "/v1/me", nil)
		r.Header.Set("Authorization", "Bearer x.y.z")
		openapitest.ExpectReport(t, OpenAPI(), good, r, "")
	})
}

const uuidZero = "00000000-0000-4000-8000-000000000000"
