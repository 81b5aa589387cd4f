package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

var (
	accountKeys    = []string{"id", "name", "slug", "personal", "role", "created_at", "updated_at"}
	membershipKeys = []string{"account_id", "user_id", "email", "role", "created_at"}
)

func wantTime(t *testing.T, what string, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || tm.Location() != time.UTC {
		t.Errorf("%s = %v, want an RFC 3339 UTC time", what, v)
	}
	return tm
}

// TestRoutes walks every route once, checking its status and body shape.
func TestRoutes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})

		// Probes and the key set.
		s.do(t, "GET", "/healthz", nil).want(t, http.StatusOK)
		ready := s.do(t, "GET", "/readyz", nil).want(t, http.StatusOK).object(t)
		if ready["status"] != "ok" || ready["deps"] != string(engine) {
			t.Errorf("readyz = %v", ready)
		}
		jwks := s.do(t, "GET", "/.well-known/jwks.json", nil).want(t, http.StatusOK).object(t)
		wantKeys(t, "key set", jwks, "keys")
		keys, _ := jwks["keys"].([]any)
		if len(keys) != 1 {
			t.Fatalf("keys = %v", keys)
		}
		k := keys[0].(map[string]any)
		wantKeys(t, "jwk", k, "kty", "crv", "x", "kid", "alg", "use")
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["use"] != "sig" || len(k["x"].(string)) != 43 {
			t.Errorf("jwk = %v", k)
		}

		// Registration.
		r := s.do(t, "POST", "/v1/users", map[string]string{"email": " Owner@Example.com ", "password": identitytest.Password, "display_name": "Olive"}).want(t, http.StatusCreated)
		user := r.object(t)
		wantKeys(t, "user", user, "id", "email")
		if user["email"] != "owner@example.com" || !uuidPattern.MatchString(user["id"].(string)) {
			t.Errorf("user = %v", user)
		}
		if ct := r.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		ownerID := user["id"].(string)
		p := s.do(t, "POST", "/v1/users", map[string]string{"email": "OWNER@example.com", "password": "another password"}).problem(t, http.StatusConflict, "conflict")
		if strings.Contains(p["detail"].(string), "owner@example.com") {
			t.Errorf("conflict detail names the address: %v", p["detail"])
		}
		p = s.do(t, "POST", "/v1/users", map[string]string{"email": "bad", "password": "short"}).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "email:invalid,password:too_short" {
			t.Errorf("errors = %s", got)
		}
		p = s.do(t, "POST", "/v1/users", map[string]string{"email": "x@example.com", "password": strings.Repeat("p", 129)}).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "password:too_long" {
			t.Errorf("errors = %s", got)
		}

		// Sessions.
		r = s.do(t, "POST", "/v1/session", map[string]string{"email": "owner@example.com", "password": identitytest.Password}).want(t, http.StatusCreated)
		sess := r.object(t)
		wantKeys(t, "session", sess, "token", "expires_at")
		if exp := wantTime(t, "expires_at", sess["expires_at"]); !exp.Equal(s.env.Clock.Now().Add(12 * time.Hour)) {
			t.Errorf("expires_at = %v, want 12h from now", exp)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("login Cache-Control = %q, want no-store", cc)
		}
		owner := sess["token"].(string)
		s.do(t, "POST", "/v1/session", map[string]string{"email": "owner@example.com", "password": "wrong password"}).problem(t, http.StatusUnauthorized, "unauthorized")
		unknown := s.do(t, "POST", "/v1/session", map[string]string{"email": "nobody@example.com", "password": "wrong password"})
		unknown.problem(t, http.StatusUnauthorized, "unauthorized")
		if unknown.Header().Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}

		me := s.do(t, "GET", "/v1/me", nil, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "me", me, "id", "email", "display_name", "staff", "created_at", "email_verified", "email_verified_at", "avatar_media_id")
		if me["id"] != ownerID || me["email"] != "owner@example.com" || me["display_name"] != "Olive" || me["staff"] != false {
			t.Errorf("me = %v", me)
		}
		wantTime(t, "me.created_at", me["created_at"])
		s.do(t, "GET", "/v1/me", nil).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "GET", "/v1/me", nil, header("Authorization", "Basic b3duZXI6cHc=")).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "GET", "/v1/me", nil, bearer(owner+"x")).problem(t, http.StatusUnauthorized, "unauthorized")

		// Accounts.
		list := s.do(t, "GET", "/v1/accounts", nil, bearer(owner)).want(t, http.StatusOK).array(t)
		if len(list) != 1 || list[0]["personal"] != true || list[0]["role"] != "owner" || list[0]["name"] != "Olive" {
			t.Fatalf("accounts = %v", list)
		}
		wantKeys(t, "account", list[0], accountKeys...)
		personalID := list[0]["id"].(string)

		r = s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Ácme Córp!"}, bearer(owner)).want(t, http.StatusCreated)
		acc := r.object(t)
		wantKeys(t, "account", acc, accountKeys...)
		if acc["name"] != "Ácme Córp!" || acc["slug"] != "acme-corp" || acc["personal"] != false || acc["role"] != "owner" {
			t.Errorf("account = %v", acc)
		}
		if wantTime(t, "created_at", acc["created_at"]) != wantTime(t, "updated_at", acc["updated_at"]) {
			t.Errorf("a new account's updated_at differs from created_at: %v", acc)
		}
		accID := acc["id"].(string)
		if loc := r.Header().Get("Location"); loc != "/v1/accounts/"+accID {
			t.Errorf("Location = %q", loc)
		}
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "ACME corp"}, bearer(owner)).problem(t, http.StatusConflict, "conflict")
		p = s.do(t, "POST", "/v1/accounts", map[string]string{"name": "日本語"}, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "name:invalid" {
			t.Errorf("errors = %s", got)
		}
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Sneaky", "owner_id": ownerID}, bearer(owner)).problem(t, http.StatusBadRequest, "malformed_json")
		s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Sneaky", "slug": "sneaky"}, bearer(owner)).problem(t, http.StatusBadRequest, "malformed_json")

		got := s.do(t, "GET", "/v1/accounts/"+accID, nil, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "account", got, accountKeys...)
		if got["id"] != accID || got["slug"] != "acme-corp" || got["role"] != "owner" {
			t.Errorf("account = %v", got)
		}
		s.env.Clock.Advance(time.Minute)
		renamed := s.do(t, "PATCH", "/v1/accounts/"+accID, map[string]string{"name": "Acme Industries"}, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "account", renamed, accountKeys...)
		if renamed["name"] != "Acme Industries" || renamed["slug"] != "acme-corp" || renamed["created_at"] != acc["created_at"] || renamed["updated_at"] == acc["updated_at"] {
			t.Errorf("renamed = %v", renamed)
		}

		// Invitations.
		joinerID, joiner := s.signUp(t, "joiner@example.com")
		r = s.do(t, "POST", "/v1/accounts/"+accID+"/invitations", map[string]string{"email": "joiner@example.com", "role": "admin"}, bearer(owner)).want(t, http.StatusCreated)
		inv := r.object(t)
		wantKeys(t, "invitation", inv, "id", "account_id", "email", "role", "token", "expires_at", "created_at")
		if inv["account_id"] != accID || inv["role"] != "admin" || inv["email"] != "joiner@example.com" || inv["token"] == "" {
			t.Errorf("invitation = %v", inv)
		}
		if wantTime(t, "expires_at", inv["expires_at"]).Sub(wantTime(t, "created_at", inv["created_at"])) != 7*24*time.Hour {
			t.Errorf("invitation lifetime: %v", inv)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("invitation Cache-Control = %q, want no-store", cc)
		}
		p = s.do(t, "POST", "/v1/accounts/"+accID+"/invitations", map[string]string{"email": "x@example.com", "role": "owner"}, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "role:invalid" {
			t.Errorf("errors = %s", got)
		}

		m := s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv["token"].(string)}, bearer(joiner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "membership", m, membershipKeys...)
		if m["account_id"] != accID || m["user_id"] != joinerID || m["role"] != "admin" || m["email"] != "joiner@example.com" {
			t.Errorf("membership = %v", m)
		}
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv["token"].(string)}, bearer(joiner)).problem(t, http.StatusGone, "invitation_used")
		wrong := s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": "no-such-token"}, bearer(joiner)).problem(t, http.StatusNotFound, "not_found")
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv["token"].(string)}).problem(t, http.StatusUnauthorized, "unauthorized")
		expired := s.do(t, "POST", "/v1/accounts/"+accID+"/invitations", map[string]string{"email": "late@example.com", "role": "member"}, bearer(owner)).want(t, http.StatusCreated).object(t)
		s.env.Clock.Advance(7*24*time.Hour + time.Second)
		_, late := s.signUp(t, "late@example.com")
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": expired["token"].(string)}, bearer(late)).problem(t, http.StatusGone, "invitation_expired")
		// Sessions last 12h: sign in again after the week.
		owner = s.do(t, "POST", "/v1/session", map[string]string{"email": "owner@example.com", "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)
		joiner = s.do(t, "POST", "/v1/session", map[string]string{"email": "joiner@example.com", "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)

		// Members.
		members := s.do(t, "GET", "/v1/accounts/"+accID+"/members", nil, bearer(joiner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "members", members, "members", "next_cursor")
		ms, _ := members["members"].([]any)
		if len(ms) != 2 {
			t.Fatalf("members = %v", ms)
		}
		for _, x := range ms {
			mm := x.(map[string]any)
			wantKeys(t, "member", mm, membershipKeys...)
			if mm["account_id"] != accID || !uuidPattern.MatchString(mm["user_id"].(string)) || mm["email"] == "" || mm["role"] == "" {
				t.Errorf("member = %v", mm)
			}
			wantTime(t, "member created_at", mm["created_at"])
		}
		changed := s.do(t, "PATCH", "/v1/accounts/"+accID+"/members/"+joinerID, map[string]string{"role": "member"}, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "membership", changed, membershipKeys...)
		if changed["role"] != "member" || changed["user_id"] != joinerID {
			t.Errorf("changed = %v", changed)
		}
		p = s.do(t, "PATCH", "/v1/accounts/"+accID+"/members/"+ownerID, map[string]string{"role": "admin"}, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "role:last_owner" {
			t.Errorf("errors = %s", got)
		}
		p = s.do(t, "DELETE", "/v1/accounts/"+accID+"/members/"+ownerID, nil, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "user_id:last_owner" {
			t.Errorf("errors = %s", got)
		}
		s.do(t, "PATCH", "/v1/accounts/"+accID+"/members/not-a-uuid", map[string]string{"role": "admin"}, bearer(owner)).problem(t, http.StatusNotFound, "not_found")
		s.do(t, "DELETE", "/v1/accounts/"+accID+"/members/"+joinerID, nil, bearer(owner)).want(t, http.StatusNoContent)
		if r := s.do(t, "DELETE", "/v1/accounts/"+accID+"/members/"+joinerID, nil, bearer(owner)); r.Code != http.StatusNotFound {
			t.Errorf("removing a removed member = %d, want 404", r.Code)
		}
		gone := s.do(t, "GET", "/v1/accounts/"+accID, nil, bearer(joiner)).problem(t, http.StatusNotFound, "not_found")
		if gone["detail"] != wrong["detail"] {
			t.Errorf("a wrong token says %q, an invisible account %q", wrong["detail"], gone["detail"])
		}

		// Operator routes.
		s.do(t, "GET", "/v1/operator/me", nil, bearer(owner)).problem(t, http.StatusForbidden, "forbidden")
		s.do(t, "GET", "/v1/operator/me", nil).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "GET", "/v1/operator/users?query=example", nil, bearer(owner)).problem(t, http.StatusForbidden, "forbidden")
		if err := s.env.Service.SetStaff(ctx, "owner@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		op := s.do(t, "GET", "/v1/operator/me", nil, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "operator", op, "user")
		wantKeys(t, "operator user", op["user"].(map[string]any), "id", "email", "staff")
		if u := op["user"].(map[string]any); u["id"] != ownerID || u["email"] != "owner@example.com" || u["staff"] != true {
			t.Errorf("operator me = %v", op)
		}
		users := s.do(t, "GET", "/v1/operator/users?query=%20EXAMPLE.com%20&limit=2", nil, bearer(owner)).want(t, http.StatusOK).object(t)
		wantKeys(t, "directory", users, "users")
		us, _ := users["users"].([]any)
		if len(us) != 2 || us[0].(map[string]any)["email"] != "joiner@example.com" || us[1].(map[string]any)["email"] != "late@example.com" {
			t.Errorf("directory = %v", us)
		}
		for _, x := range us {
			rec := x.(map[string]any)
			wantKeys(t, "staff record", rec, "id", "email", "display_name", "disabled_at", "verified_at", "created_at", "email_verified", "email_verified_at")
			// Every user here verified through the emailed link.
			if rec["disabled_at"] != nil || rec["verified_at"] == nil || rec["email_verified"] != true || rec["email_verified_at"] != rec["verified_at"] {
				t.Errorf("record = %v", rec)
			}
		}
		if us := s.do(t, "GET", "/v1/operator/users?query=example", nil, bearer(owner)).want(t, http.StatusOK).object(t)["users"].([]any); len(us) != 3 {
			t.Errorf("directory without limit = %d records, want 3", len(us))
		}
		for _, tt := range []struct{ query, want string }{
			{"?query=a", "query:too_short"},
			{"", "query:too_short"},
			{"?query=%20%20a%20", "query:too_short"},
			{"?query=ab&limit=51", "limit:too_large"},
			{"?query=ab&limit=0", "limit:invalid"},
			{"?query=ab&limit=-3", "limit:invalid"},
			{"?query=ab&limit=ten", "limit:invalid"},
			{"?query=a%00b", "query:invalid"},
		} {
			p := s.do(t, "GET", "/v1/operator/users"+tt.query, nil, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
			if got := strings.Join(fieldErrors(p), ","); got != tt.want {
				t.Errorf("directory%s errors = %s, want %s", tt.query, got, tt.want)
			}
		}
		s.do(t, "GET", "/v1/operator/users?query=ab&limit=50", nil, bearer(owner)).want(t, http.StatusOK)

		// Deletion.
		p = s.do(t, "DELETE", "/v1/accounts/"+personalID, nil, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "personal_account")
		if _, ok := p["errors"]; ok {
			t.Errorf("personal_account carries field errors: %v", p)
		}
		s.do(t, "DELETE", "/v1/accounts/"+accID, nil, bearer(owner)).want(t, http.StatusNoContent)
		s.do(t, "GET", "/v1/accounts/"+accID, nil, bearer(owner)).problem(t, http.StatusNotFound, "not_found")

		// Logout ends that session only.
		other := s.do(t, "POST", "/v1/session", map[string]string{"email": "owner@example.com", "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)
		r = s.do(t, "DELETE", "/v1/session", nil, bearer(owner)).want(t, http.StatusNoContent)
		if c := r.Header().Get("Set-Cookie"); !strings.HasPrefix(c, "__Host-session=;") || !strings.Contains(c, "Max-Age=0") {
			t.Errorf("logout Set-Cookie = %q, want the cookie cleared", c)
		}
		if r.Body.Len() != 0 {
			t.Errorf("204 with a body: %q", r.Body)
		}
		s.do(t, "GET", "/v1/me", nil, bearer(owner)).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "DELETE", "/v1/session", nil, bearer(owner)).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "GET", "/v1/me", nil, bearer(other)).want(t, http.StatusOK)

		// Unknown routes and methods.
		for _, rt := range []struct{ method, path string }{{"GET", "/v1/nothing"}, {"GET", "/"}, {"GET", "/v1/users"}, {"PUT", "/v1/session"}} {
			if r := s.do(t, rt.method, rt.path, nil, bearer(other)); r.Code != http.StatusNotFound && r.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s = %d, want 404 or 405", rt.method, rt.path, r.Code)
			}
		}
	})
}
