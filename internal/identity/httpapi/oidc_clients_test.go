package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// newOIDCServer is newServer with client registration mounted.
func newOIDCServer(t *testing.T, engine sqldb.Engine) *server {
	t.Helper()
	env := identitytest.New(t, engine, identitytest.Config{})
	logger, logs := logtest.New()
	h := httpapi.NewServer(httpapi.Deps{
		Service: env.Service, OIDCStore: env.Store, Logger: logger,
		Ready: func(context.Context) httpx.Readiness { return httpx.Readiness{Ready: true} },
	})
	return &server{env: env, h: openapitest.Wrap(t, httpapi.OpenAPI(), h), logs: logs}
}

func TestOIDCClientRegistration(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		s := newOIDCServer(t, engine)
		_, owner := s.signUp(t, "owner@example.com")
		account := s.do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme"}, bearer(owner)).want(t, http.StatusCreated).object(t)["id"].(string)
		base := "/v1/accounts/" + account + "/oidc_clients"

		created := s.do(t, "POST", base, map[string]any{
			"name": "Shop", "redirect_uris": []string{"https://shop.example/cb"},
			"grant_types": []string{"authorization_code", "refresh_token"}, "scopes": []string{"openid", "email"},
		}, bearer(owner)).want(t, http.StatusCreated)
		if got := created.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control: got %q, want no-store", got)
		}
		c := created.object(t)
		secret, _ := c["client_secret"].(string)
		if len(secret) < 43 {
			t.Fatalf("client_secret: got %q, want a 256-bit secret", secret)
		}
		var stored string
		if err := s.env.DB.QueryRow(ctx, `SELECT secret_digest FROM oidc_clients WHERE id = $1`, c["client_id"]).Scan(&stored); err != nil || stored != identity.TokenDigest(secret) {
			t.Errorf("stored secret: got %q (%v), want only its digest", stored, err)
		}
		list := s.do(t, "GET", base, nil, bearer(owner)).want(t, http.StatusOK).object(t)["oidc_clients"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["client_secret"] != nil {
			t.Errorf("list: got %v, want one client without its secret", list)
		}
		events := s.env.Outbox(t)
		if last := events[len(events)-1]; last.Type != identity.EventOIDCClientCreated {
			t.Errorf("last event: got %s, want %s", last.Type, identity.EventOIDCClientCreated)
		}

		tests := []struct {
			name string
			body map[string]any
		}{
			{"NoRedirectURIs", map[string]any{"name": "x", "redirect_uris": []string{}}},
			{"HTTPNotLoopback", map[string]any{"name": "x", "redirect_uris": []string{"http://shop.example/cb"}}},
			{"Fragment", map[string]any{"name": "x", "redirect_uris": []string{"https://shop.example/cb#x"}}},
			{"Relative", map[string]any{"name": "x", "redirect_uris": []string{"/cb"}}},
			{"UnknownScope", map[string]any{"name": "x", "redirect_uris": []string{"https://a.example/cb"}, "scopes": []string{"openid", "admin"}}},
			{"NoAuthorizationCode", map[string]any{"name": "x", "redirect_uris": []string{"https://a.example/cb"}, "grant_types": []string{"refresh_token"}}},
			{"NameFullwidth", map[string]any{"name": "\uff33\uff48\uff4f\uff50", "redirect_uris": []string{"https://a.example/cb"}}},
			{"NameMixedScripts", map[string]any{"name": "\u0405hop", "redirect_uris": []string{"https://a.example/cb"}}},
			{"NameVariationSelector", map[string]any{"name": "Shop\ufe0e", "redirect_uris": []string{"https://a.example/cb"}}},
			{"NameHangulFiller", map[string]any{"name": "\u3164", "redirect_uris": []string{"https://a.example/cb"}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s.do(t, "POST", base, tt.body, bearer(owner)).problem(t, http.StatusUnprocessableEntity, identity.CodeValidation)
			})
		}

		_, stranger := s.signUp(t, "stranger@example.com")
		s.do(t, "GET", base, nil, bearer(stranger)).problem(t, http.StatusNotFound, identity.CodeNotFound)

		id := c["client_id"].(string)
		s.do(t, "DELETE", base+"/"+id, nil, bearer(owner)).want(t, http.StatusNoContent)
		s.do(t, "DELETE", base+"/"+id, nil, bearer(owner)).problem(t, http.StatusNotFound, identity.CodeNotFound)
		events = s.env.Outbox(t)
		if last := events[len(events)-1]; last.Type != identity.EventOIDCClientRevoked {
			t.Errorf("last event: got %s, want %s", last.Type, identity.EventOIDCClientRevoked)
		}
	})
}
