package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestUnverifiedUsersKeepWorking: verification gates accepting an
// invitation and nothing else; staff who never verify keep the console.
func TestUnverifiedUsersKeepWorking(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newServer(t, engine, identitytest.Config{})
		s.do(t, "POST", "/v1/users", map[string]string{"email": "ada@example.com", "password": identitytest.Password}).want(t, http.StatusCreated)
		if err := s.env.Service.SetStaff(context.Background(), "ada@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		tok := s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)
		me := s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)
		if me["email_verified"] != false || me["email_verified_at"] != nil {
			t.Errorf("me = %v, want unverified", me)
		}
		s.do(t, "GET", "/v1/operator/me", nil, bearer(tok)).want(t, http.StatusOK)
		recs := s.do(t, "GET", "/v1/operator/users?query=ada", nil, bearer(tok)).want(t, http.StatusOK).object(t)["users"].([]any)
		if len(recs) != 1 || recs[0].(map[string]any)["email_verified"] != false {
			t.Errorf("directory = %v, want ada unverified", recs)
		}
		acc := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(tok)).want(t, http.StatusCreated).object(t)["id"].(string)
		s.do(t, "GET", "/v1/accounts/"+acc, nil, bearer(tok)).want(t, http.StatusOK)

		// Verified over HTTP: /v1/me and the directory say so at once.
		s.verify(t, "ada@example.com")
		me = s.do(t, "GET", "/v1/me", nil, bearer(tok)).want(t, http.StatusOK).object(t)
		if me["email_verified"] != true || me["email_verified_at"] == nil {
			t.Errorf("me = %v, want verified", me)
		}
	})
}

// TestLifecycleSecretsStayOutOfLogs: one-time tokens and passwords of the
// lifecycle's requests are never logged.
func TestLifecycleSecretsStayOutOfLogs(t *testing.T) {
	s := newServer(t, sqldb.SQLite, identitytest.Config{})
	s.signUp(t, "ada@example.com")
	s.do(t, "POST", "/v1/password/reset", map[string]string{"email": "ada@example.com"}).want(t, http.StatusAccepted)
	reset := s.env.LinkToken(t, "ada@example.com", identity.TemplatePasswordReset)
	s.do(t, "POST", "/v1/password/reset/confirm", map[string]string{"token": reset, "password": "brand new secret pw"}).want(t, http.StatusOK)
	// The reset ended every session and link: sign in again for the change.
	tok := s.do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": "brand new secret pw"}).want(t, http.StatusCreated).object(t)["token"].(string)
	s.do(t, "POST", "/v1/me/email", map[string]string{"email": "new@example.com", "password": "brand new secret pw"}, bearer(tok)).want(t, http.StatusAccepted)
	change := s.env.LinkToken(t, "new@example.com", identity.TemplateEmailChangeConfirm)
	s.do(t, "POST", "/v1/email/change/confirm", map[string]string{"token": change}).want(t, http.StatusOK)
	logs := s.logs.String()
	if !strings.Contains(logs, `"path":"/v1/password/reset/confirm"`) {
		t.Fatalf("no request was logged: %q", logs)
	}
	for _, secret := range []string{reset, change, "brand new secret pw", identitytest.Password} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret (%.12s…)", secret)
		}
	}
}
