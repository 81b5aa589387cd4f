package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestInviteMalformedEmailProblem: the problem's detail and its errors
// name the same field (issue 32 item 11).
func TestInviteMalformedEmailProblem(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, owner := s.signUp(t, "owner@example.com")
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		p := s.do(t, "POST", "/v1/accounts/"+acc+"/invitations", map[string]string{"email": "not-an-address", "role": "member"}, bearer(owner)).
			problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "email:invalid" {
			t.Errorf("errors = %s, want email:invalid", got)
		}
		if d := p["detail"].(string); !strings.Contains(d, "email") || strings.Contains(d, "role") {
			t.Errorf("detail = %q, want it about email and not role", d)
		}
	})
}

// TestMemberLeaves: a plain member (below the admin that removing others
// needs) leaves with DELETE on their own membership, and then no longer
// sees the account; the last owner cannot leave.
func TestMemberLeaves(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		ownerID, owner := s.signUp(t, "owner@example.com")
		memberID, member := s.signUp(t, "member@example.com")
		acc := "/v1/accounts/" + s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		tok := s.do(t, "POST", acc+"/invitations", map[string]string{"email": "member@example.com", "role": "member"}, bearer(owner)).want(t, http.StatusCreated).object(t)["token"].(string)
		s.do(t, "POST", "/v1/invitations/accept", map[string]string{"token": tok}, bearer(member)).want(t, http.StatusOK)

		s.do(t, "DELETE", acc+"/members/"+ownerID, nil, bearer(member)).problem(t, http.StatusForbidden, "forbidden")
		s.do(t, "DELETE", acc+"/members/"+memberID, nil, bearer(member)).want(t, http.StatusNoContent)
		s.do(t, "GET", acc, nil, bearer(member)).problem(t, http.StatusNotFound, "not_found")
		p := s.do(t, "DELETE", acc+"/members/"+ownerID, nil, bearer(owner)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
		if got := strings.Join(fieldErrors(p), ","); got != "user_id:last_owner" {
			t.Errorf("errors = %s, want user_id:last_owner", got)
		}
	})
}

// TestSessionsAndPasswordOverHTTP: the session list marks the current
// one; a password change ends the others and keeps the current.
func TestSessionsAndPasswordOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, first := s.signUp(t, "ada@example.com")
		second := s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)
		list := s.do(t, "GET", "/v1/me/sessions", nil, bearer(second)).want(t, http.StatusOK).object(t)["sessions"].([]any)
		if len(list) != 2 {
			t.Fatalf("sessions = %v, want 2", list)
		}
		var current int
		for _, x := range list {
			m := x.(map[string]any)
			wantKeys(t, "session", m, "id", "created_at", "last_seen_at", "expires_at", "current")
			if m["current"] == true {
				current++
			}
		}
		if current != 1 {
			t.Errorf("%d sessions marked current, want 1", current)
		}
		s.do(t, "POST", "/v1/me/password", map[string]string{"current_password": "wrong password", "new_password": "a brand new passphrase"}, bearer(second)).
			problem(t, http.StatusForbidden, "invalid_credentials")
		s.do(t, "POST", "/v1/me/password", map[string]string{"current_password": identitytest.Password, "new_password": "a brand new passphrase"}, bearer(second)).
			want(t, http.StatusNoContent)
		s.do(t, "GET", "/v1/me", nil, bearer(first)).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "GET", "/v1/me", nil, bearer(second)).want(t, http.StatusOK)
		s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": "a brand new passphrase"}).want(t, http.StatusCreated)
		// One session signed out by its id: its token stops working; another
		// user cannot end it, and an ended or unknown one is 404.
		third := s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": "a brand new passphrase"}).want(t, http.StatusCreated).object(t)["token"].(string)
		var thirdID string
		for _, x := range s.do(t, "GET", "/v1/me/sessions", nil, bearer(third)).want(t, http.StatusOK).object(t)["sessions"].([]any) {
			if m := x.(map[string]any); m["current"] == true {
				thirdID = m["id"].(string)
			}
		}
		_, stranger := s.signUp(t, "eve@example.com")
		s.do(t, "DELETE", "/v1/me/sessions/"+thirdID, nil, bearer(stranger)).problem(t, http.StatusNotFound, "not_found")
		s.do(t, "GET", "/v1/me", nil, bearer(third)).want(t, http.StatusOK)
		s.do(t, "DELETE", "/v1/me/sessions/"+thirdID, nil, bearer(second)).want(t, http.StatusNoContent)
		s.do(t, "GET", "/v1/me", nil, bearer(third)).problem(t, http.StatusUnauthorized, "unauthorized")
		s.do(t, "DELETE", "/v1/me/sessions/"+thirdID, nil, bearer(second)).problem(t, http.StatusNotFound, "not_found")
		s.do(t, "DELETE", "/v1/me/sessions/not-an-id", nil, bearer(second)).problem(t, http.StatusNotFound, "not_found")
		s.do(t, "GET", "/v1/me", nil, bearer(second)).want(t, http.StatusOK)
		s.do(t, "DELETE", "/v1/me/sessions", nil, bearer(second)).want(t, http.StatusNoContent)
		if n := len(s.do(t, "GET", "/v1/me/sessions", nil, bearer(second)).want(t, http.StatusOK).object(t)["sessions"].([]any)); n != 1 {
			t.Errorf("sessions after signing out elsewhere = %d, want 1", n)
		}
	})
}

// TestAvatarOverHTTP: PATCH /v1/me sets the avatar's media id, which
// GET /v1/me then names, and null removes it; a missing, empty or
// malformed id is a 422 on avatar_media_id and changes nothing.
func TestAvatarOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		_, tok := s.signUp(t, "ada@example.com")
		const media = "0193a4f2-7b1c-7d2e-8f30-4a5b6c7d8e9f"
		if got := s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)["avatar_media_id"]; got != nil {
			t.Fatalf("avatar_media_id before = %v, want null", got)
		}
		if got := s.do(t, "PATCH", "/v1/me", map[string]any{"avatar_media_id": strings.ToUpper(media)}, bearer(tok)).
			want(t, http.StatusOK).object(t)["avatar_media_id"]; got != media {
			t.Errorf("PATCH avatar_media_id = %v, want %s", got, media)
		}
		if got := s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)["avatar_media_id"]; got != media {
			t.Errorf("GET avatar_media_id = %v, want %s", got, media)
		}
		for _, c := range []struct {
			name, body, want string
		}{
			{"ErrAbsent", `{}`, "avatar_media_id:required"},
			{"ErrEmpty", `{"avatar_media_id":""}`, "avatar_media_id:invalid"},
			{"ErrNotAnID", `{"avatar_media_id":"../../etc/passwd"}`, "avatar_media_id:invalid"},
			{"ErrNumber", `{"avatar_media_id":5}`, "avatar_media_id:invalid"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := s.do(t, "PATCH", "/v1/me", c.body, bearer(tok)).problem(t, http.StatusUnprocessableEntity, "validation_failed")
				if got := strings.Join(fieldErrors(p), ","); got != c.want {
					t.Errorf("errors = %s, want %s", got, c.want)
				}
			})
		}
		s.do(t, "PATCH", "/v1/me", `{"avatar_media_id":null,"email":"x@example.com"}`, bearer(tok)).problem(t, http.StatusBadRequest, "malformed_json")
		if got := s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)["avatar_media_id"]; got != media {
			t.Errorf("avatar_media_id after refusals = %v, want %s", got, media)
		}
		if got := s.do(t, "PATCH", "/v1/me", `{"avatar_media_id":null}`, bearer(tok)).want(t, http.StatusOK).object(t)["avatar_media_id"]; got != nil {
			t.Errorf("avatar_media_id after null = %v, want null", got)
		}
		s.do(t, "PATCH", "/v1/me", `{"avatar_media_id":null}`).problem(t, http.StatusUnauthorized, "unauthorized")
	})
}
