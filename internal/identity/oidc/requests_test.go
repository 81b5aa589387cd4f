package oidc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestTheWebAppAnswersRequests: the request endpoints the web app's
// sign-in and consent pages use, and the callback's guard.
func TestTheWebAppAnswersRequests(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		start := func(t *testing.T) (*http.Client, string) {
			b := w.browser(t)
			return b, w.authorize(t, b, conf.AuthCodeURL("s-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		}
		refusedTo := func(t *testing.T, loc *url.URL, reason string) {
			t.Helper()
			if got := loc.String(); got != webApp+oidc.ErrorPath+"?reason="+reason {
				t.Errorf("callback: redirected to %q, want the web app's error page (%s), never the client", got, reason)
			}
		}

		t.Run("ShowNamesTheClientAndScopes", func(t *testing.T) {
			_, id := start(t)
			resp, err := w.rp.Get(identitytest.Issuer + "/oauth2/requests/" + id)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v struct {
				ClientName  string `json:"client_name"`
				RedirectURI string `json:"redirect_uri"`
				Scopes      []string
			}
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d (%v)", resp.StatusCode, err)
			}
			if v.ClientName != "Shop" || v.RedirectURI != redirectURI || strings.Join(v.Scopes, " ") != "openid email profile offline_access accounts" {
				t.Errorf("got %+v, want client Shop and the five scopes", v)
			}
		})
		t.Run("UnknownOrMalformedRequestIsGone", func(t *testing.T) {
			for _, id := range []string{uuid.NewString(), "not-an-id"} {
				resp, err := w.rp.Get(identitytest.Issuer + "/oauth2/requests/" + id)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("%s: got %d, want 404", id, resp.StatusCode)
				}
				if status, _ := w.answer(t, id, "allow", w.session(t)); status != http.StatusNotFound {
					t.Errorf("allow %s: got %d, want 404", id, status)
				}
			}
		})
		t.Run("AnswerNeedsAPersonsSession", func(t *testing.T) {
			_, id := start(t)
			if status, _ := w.answer(t, id, "allow", ""); status != http.StatusUnauthorized {
				t.Errorf("without a session: got %d, want 401", status)
			}
			if status, _ := w.answer(t, id, "allow", "not-a-token"); status != http.StatusUnauthorized {
				t.Errorf("with a wrong token: got %d, want 401", status)
			}
			key, err := w.env.Service.CreateAPIKey(context.Background(), w.admin, identity.CreateAPIKeyInput{Name: "ci", Scopes: identity.Scopes()[:1]})
			if err != nil {
				t.Fatal(err)
			}
			if status, _ := w.answer(t, id, "allow", key.Token); status != http.StatusUnauthorized {
				t.Errorf("with an API key: got %d, want 401", status)
			}
		})
		t.Run("DenySendsTheClientAccessDenied", func(t *testing.T) {
			b, id := start(t)
			status, next := w.answer(t, id, "deny", w.session(t))
			if status != http.StatusOK {
				t.Fatalf("deny: got %d", status)
			}
			loc := follow(t, b, next)
			if !strings.HasPrefix(loc.String(), redirectURI+"?") || loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" || loc.Query().Get("state") != "s-1" {
				t.Errorf("after deny: redirected to %q, want the client with access_denied and the state", loc)
			}
		})
		t.Run("OnlyTheFirstAnswerCounts", func(t *testing.T) {
			_, id := start(t)
			if status, _ := w.answer(t, id, "allow", w.session(t)); status != http.StatusOK {
				t.Fatalf("first allow: got %d", status)
			}
			for _, d := range []string{"allow", "deny"} {
				if status, _ := w.answer(t, id, d, w.session(t)); status != http.StatusNotFound {
					t.Errorf("second answer %s: got %d, want 404", d, status)
				}
			}
		})
		t.Run("CallbackNeedsTheAnswersKey", func(t *testing.T) {
			b, id := start(t)
			_, next := w.answer(t, id, "allow", w.session(t))
			u, _ := url.Parse(next)
			q := u.Query()
			for _, k := range []string{"", "x", strings.Repeat("A", 43)} {
				q.Set("k", k)
				refusedTo(t, follow(t, b, identitytest.Issuer+oidc.CallbackPath+"?"+q.Encode()), "browser")
			}
			// A key of the other decision does not turn an allow into a deny.
			_, other := start(t)
			status, denyNext := w.answer(t, other, "deny", w.session(t))
			if status != http.StatusOK {
				t.Fatal(status)
			}
			du, _ := url.Parse(denyNext)
			q.Set("k", du.Query().Get("k"))
			refusedTo(t, follow(t, b, identitytest.Issuer+oidc.CallbackPath+"?"+q.Encode()), "browser")

			if loc := follow(t, b, next); loc.Query().Get("code") == "" {
				t.Fatalf("with the key: got %q, want a code", loc)
			}
			refusedTo(t, follow(t, b, next), "expired")
		})
		t.Run("CallbackOfAnUnansweredRequest", func(t *testing.T) {
			b, id := start(t)
			refusedTo(t, follow(t, b, identitytest.Issuer+oidc.CallbackPath+"?id="+id), "unanswered")
			refusedTo(t, follow(t, b, identitytest.Issuer+oidc.CallbackPath+"?id=nope"), "expired")
		})
		t.Run("ExpiredRequestIsGone", func(t *testing.T) {
			_, id := start(t)
			w.env.Clock.Advance(identity.OIDCAuthRequestTTL + time.Second)
			if status, _ := w.answer(t, id, "allow", w.session(t)); status != http.StatusNotFound {
				t.Errorf("allow after expiry: got %d, want 404", status)
			}
		})
	})
}

// TestScopesBeyondTheRegistrationAreNotGranted: a client registered for
// openid alone asking for email and accounts gets neither.
func TestScopesBeyondTheRegistrationAreNotGranted(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret, err := identity.RegisterOIDCClient(context.Background(), w.env.Store, w.admin, identity.RegisterOIDCClientInput{
			Name: "Narrow", RedirectURIs: []string{redirectURI}, Scopes: []string{"openid"},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, conf := w.relyingParty(t, c, secret)
		v := oauth2.GenerateVerifier()
		tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if tok.RefreshToken != "" {
			t.Errorf("refresh token for a client without the refresh_token grant: got one")
		}
		status, out := w.tokenCall(t, "/oauth2/introspect", url.Values{"token": {tok.AccessToken}}, c.ID, secret)
		if status != http.StatusOK || out["scope"] != "openid" || out["email"] != nil || out["accounts"] != nil {
			t.Errorf("introspection: got %d %v, want scope openid only", status, out)
		}
	})
}
