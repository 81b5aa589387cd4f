package oidc_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestRedirectURIsNotRegisteredExactlyAreNeverRedirectedTo(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		for _, bad := range []string{
			"http://127.0.0.1:9/callback/",
			"http://127.0.0.1:9/callback?x=1",
			"http://127.0.0.1:10/callback",
			"http://127.0.0.1:9/Callback",
			"http://localhost:9/callback",
			"https://127.0.0.1:9/callback",
			"http://127.0.0.1:9/callback#frag",
			"https://evil.example/callback",
		} {
			t.Run(bad, func(t *testing.T) {
				cc := *conf
				cc.RedirectURL = bad
				resp, err := w.browser(t).Get(cc.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				loc := resp.Header.Get("Location")
				if loc != "" && !strings.HasPrefix(loc, identitytest.Issuer) {
					t.Fatalf("got a redirect to %q, want none away from the provider", loc)
				}
				if resp.StatusCode < 400 {
					t.Fatalf("got status %d, want an error page", resp.StatusCode)
				}
			})
		}
	})
}

func TestCodeExchangeRefusals(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		exchange := func(code string, form url.Values, sec string) int {
			form.Set("grant_type", "authorization_code")
			form.Set("code", code)
			form.Set("redirect_uri", redirectURI)
			status, _ := w.tokenCall(t, "/oauth2/token", form, c.ID, sec)
			return status
		}
		tests := []struct {
			name   string
			form   func(verifier string) url.Values
			secret string
			want   int
		}{
			{"MissingVerifier", func(string) url.Values { return url.Values{} }, secret, http.StatusBadRequest},
			{"WrongVerifier", func(string) url.Values { return url.Values{"code_verifier": {oauth2.GenerateVerifier()}} }, secret, http.StatusBadRequest},
			{"WrongSecret", func(v string) url.Values { return url.Values{"code_verifier": {v}} }, secret + "x", http.StatusUnauthorized},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				v := oauth2.GenerateVerifier()
				code := w.code(t, conf, oauth2.S256ChallengeOption(v))
				if got := exchange(code, tt.form(v), tt.secret); got != tt.want {
					t.Errorf("got %d, want %d", got, tt.want)
				}
			})
		}

		t.Run("CodeReuseRevokesWhatTheFirstIssued", func(t *testing.T) {
			v := oauth2.GenerateVerifier()
			code := w.code(t, conf, oauth2.S256ChallengeOption(v))
			tok, err := conf.Exchange(w.ctx, code, oauth2.VerifierOption(v))
			if err != nil {
				t.Fatalf("first exchange: %v", err)
			}
			if got := exchange(code, url.Values{"code_verifier": {v}}, secret); got != http.StatusBadRequest {
				t.Fatalf("second exchange: got %d, want 400", got)
			}
			if w.active(t, c, secret, tok.AccessToken) {
				t.Errorf("the first exchange's access token: got active, want revoked")
			}
			if status, _ := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, c.ID, secret); status != http.StatusBadRequest {
				t.Errorf("the first exchange's refresh token: got %d, want 400", status)
			}
		})

		t.Run("PlainChallengeRefused", func(t *testing.T) {
			u := conf.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", "abc"), oauth2.SetAuthURLParam("code_challenge_method", "plain"))
			resp, err := w.browser(t).Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if loc == nil || loc.Query().Get("error") == "" {
				t.Fatalf("got %d to %q, want an error redirect", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	})
}

func TestPublicClientNeedsPKCE(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, true)
		if secret != "" {
			t.Fatalf("a public client got a secret")
		}
		_, conf := w.relyingParty(t, c, "")
		resp, err := w.browser(t).Get(conf.AuthCodeURL("s"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || loc.Query().Get("error") != "invalid_request" {
			t.Fatalf("without PKCE: got %d to %q, want invalid_request", resp.StatusCode, resp.Header.Get("Location"))
		}
		v := oauth2.GenerateVerifier()
		code := w.code(t, conf, oauth2.S256ChallengeOption(v))
		if _, err := conf.Exchange(w.ctx, code, oauth2.VerifierOption(v)); err != nil {
			t.Fatalf("public exchange with PKCE: %v", err)
		}
	})
}

func TestRevocationAndClientDeletion(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		flow := func() *oauth2.Token {
			v := oauth2.GenerateVerifier()
			tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			return tok
		}

		t.Run("RevokeAccessToken", func(t *testing.T) {
			tok := flow()
			if status, out := w.tokenCall(t, "/oauth2/revoke", url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}, c.ID, secret); status != http.StatusOK {
				t.Fatalf("revoke: got %d %v", status, out)
			}
			if w.active(t, c, secret, tok.AccessToken) {
				t.Errorf("revoked access token: got active")
			}
			if got := w.userinfoStatus(t, tok.AccessToken); got != http.StatusUnauthorized {
				t.Errorf("userinfo with a revoked token: got %d, want 401 invalid_token", got)
			}
		})
		t.Run("RevokeRefreshTokenEndsItsChain", func(t *testing.T) {
			tok := flow()
			if status, out := w.tokenCall(t, "/oauth2/revoke", url.Values{"token": {tok.RefreshToken}}, c.ID, secret); status != http.StatusOK {
				t.Fatalf("revoke: got %d %v", status, out)
			}
			if status, _ := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, c.ID, secret); status != http.StatusBadRequest {
				t.Errorf("refresh with a revoked token: got %d, want 400", status)
			}
			if w.active(t, c, secret, tok.AccessToken) {
				t.Errorf("access token of a revoked refresh token: got active")
			}
		})
		t.Run("IntrospectionByAnotherClientSeesNothing", func(t *testing.T) {
			tok := flow()
			other, otherSecret := w.client(t, false)
			if w.active(t, other, otherSecret, tok.AccessToken) {
				t.Errorf("another client's introspection: got active")
			}
		})
		t.Run("DeletedClientsTokensAreDead", func(t *testing.T) {
			tok := flow()
			if err := identity.RevokeOIDCClient(context.Background(), w.env.Store, w.admin, c.ID); err != nil {
				t.Fatalf("delete client: %v", err)
			}
			if got := w.userinfoStatus(t, tok.AccessToken); got != http.StatusUnauthorized {
				t.Errorf("userinfo with a deleted client's token: got %d, want 401 invalid_token", got)
			}
			if status, _ := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, c.ID, secret); status == http.StatusOK {
				t.Errorf("refresh for a deleted client: got 200")
			}
			var live int
			if err := w.env.DB.QueryRow(context.Background(), `SELECT count(*) FROM oidc_tokens WHERE client_id = $1 AND revoked_at IS NULL`, c.ID).Scan(&live); err != nil || live != 0 {
				t.Errorf("live tokens of the deleted client: got %d (%v), want 0", live, err)
			}
			list, err := identity.ListOIDCClients(context.Background(), w.env.Store, w.admin)
			kept := false
			for _, l := range list {
				kept = kept || (l.ID == c.ID && l.RevokedAt != nil)
			}
			if err != nil || !kept {
				t.Errorf("the deleted client's row: got %+v (%v), want kept with revoked_at", list, err)
			}
			if err := identity.RevokeOIDCClient(context.Background(), w.env.Store, w.admin, c.ID); err != identity.ErrOIDCClientNotFound {
				t.Errorf("deleting twice: got %v, want ErrOIDCClientNotFound", err)
			}
			resp, err := w.browser(t).Get(conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("authorization for a deleted client: got %d, want an error page", resp.StatusCode)
			}
		})
	})
}
