package oidc_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// loginPage starts a flow in browser b and returns the request's id.
func (w *world) loginPage(t *testing.T, b *http.Client, conf *oauth2.Config) string {
	t.Helper()
	page := get(t, b, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), http.StatusOK)
	m := idField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no sign-in form in %q", page)
	}
	return m[1]
}

func TestSignInAndConsentPages(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		login := identitytest.Issuer + oidc.LoginPath
		consent := identitytest.Issuer + oidc.ConsentPath

		t.Run("WrongPasswordStaysOnTheForm", func(t *testing.T) {
			b := w.browser(t)
			id := w.loginPage(t, b, conf)
			page := post(t, b, login, url.Values{"id": {id}, "email": {w.email}, "password": {"wrong password!"}}, http.StatusUnauthorized)
			if !strings.Contains(page, "wrong") || !strings.Contains(page, `value="`+id+`"`) {
				t.Errorf("got %q, want the form again with an error", page)
			}
		})
		t.Run("DenyRedirectsAccessDenied", func(t *testing.T) {
			b := w.browser(t)
			id := w.loginPage(t, b, conf)
			post(t, b, login, url.Values{"id": {id}, "email": {w.email}, "password": {identitytest.Password}}, http.StatusOK)
			resp, err := b.PostForm(consent, url.Values{"id": {id}, "decision": {"deny"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if loc == nil || !strings.HasPrefix(loc.String(), redirectURI) || loc.Query().Get("code") != "" || loc.Query().Get("error") == "" {
				t.Errorf("after deny: got %d to %q, want an error redirect without a code", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
		t.Run("ConsentInAnotherBrowserRefused", func(t *testing.T) {
			b := w.browser(t)
			id := w.loginPage(t, b, conf)
			post(t, b, login, url.Values{"id": {id}, "email": {w.email}, "password": {identitytest.Password}}, http.StatusOK)
			other := w.browser(t)
			post(t, other, consent, url.Values{"id": {id}, "decision": {"allow"}}, http.StatusNotFound)
			get(t, other, consent+"?id="+id, http.StatusNotFound)
		})
		t.Run("CrossSiteSignInRefused", func(t *testing.T) {
			b := w.browser(t)
			id := w.loginPage(t, b, conf)
			req, _ := http.NewRequest(http.MethodPost, login, strings.NewReader(url.Values{"id": {id}, "email": {w.email}, "password": {identitytest.Password}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			resp, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("got %d, want 403", resp.StatusCode)
			}
		})
		t.Run("ExpiredRequestIsGone", func(t *testing.T) {
			b := w.browser(t)
			id := w.loginPage(t, b, conf)
			w.env.Clock.Advance(identity.OIDCAuthRequestTTL + time.Second)
			post(t, b, login, url.Values{"id": {id}, "email": {w.email}, "password": {identitytest.Password}}, http.StatusNotFound)
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
