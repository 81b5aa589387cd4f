package oidc_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const redirectURI = "http://127.0.0.1:9/callback"

// rewrite sends requests for the issuer's host to the test server, so the
// relying party and the browser use the issuer's own URLs.
type rewrite struct{ target *url.URL }

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "identity.test" {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = rw.target.Scheme, rw.target.Host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// world is a provider over a fresh database, a user who administers an
// account, and a relying party's HTTP client.
type world struct {
	env     *identitytest.Env
	admin   identity.Principal
	rp      *http.Client
	ctx     context.Context
	email   string
	account string
}

func newWorld(t testing.TB, engine sqldb.Engine) *world {
	t.Helper()
	env := identitytest.New(t, engine, identitytest.Config{})
	h, err := oidc.New(oidc.Config{Issuer: identitytest.Issuer, PublicURL: webApp, Service: env.Service, Store: env.Store, MasterKey: env.MasterKey, Now: env.Clock.Now})
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	// Served as identitycmd serves it: behind identity's own handler.
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{Service: env.Service, OIDCStore: env.Store, OIDC: h, Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	target, _ := url.Parse(srv.URL)
	rp := &http.Client{Transport: rewrite{target}}
	owner := env.User(t, "alice@example.com")
	admin := env.Team(t, owner, "Acme")
	return &world{env: env, admin: admin, rp: rp, ctx: gooidc.ClientContext(context.Background(), rp), email: "alice@example.com", account: admin.Account.ID}
}

func (w *world) client(t testing.TB, public bool, grants ...string) (identity.OIDCClient, string) {
	t.Helper()
	if grants == nil {
		grants = []string{"authorization_code", "refresh_token"}
	}
	c, secret, err := identity.RegisterOIDCClient(context.Background(), w.env.Store, w.admin, identity.RegisterOIDCClientInput{
		Name: "Shop", RedirectURIs: []string{redirectURI}, GrantTypes: grants, Public: public,
		Scopes: []string{"openid", "email", "profile", "offline_access", "accounts"},
	})
	if err != nil {
		t.Fatalf("register client: %v", err)
	}
	return c, secret
}

func (w *world) relyingParty(t testing.TB, c identity.OIDCClient, secret string) (*gooidc.Provider, *oauth2.Config) {
	t.Helper()
	p, err := gooidc.NewProvider(w.ctx, identitytest.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return p, &oauth2.Config{
		ClientID: c.ID, ClientSecret: secret, Endpoint: p.Endpoint(), RedirectURL: redirectURI,
		Scopes: []string{gooidc.ScopeOpenID, "email", "profile", gooidc.ScopeOfflineAccess, "accounts"},
	}
}

// browser is a user agent with a cookie jar that stops at any redirect
// leaving the issuer.
func (w *world) browser(t testing.TB) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: w.rp.Transport, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host != "identity.test" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// webApp is where the provider sends the browser to sign in: the test
// plays the web app's part through the provider's request endpoints.
const webApp = "http://web.test"

// authorize starts a flow in browser b and returns the request's id from
// the redirect to the web app's sign-in page.
func (w *world) authorize(t testing.TB, b *http.Client, authURL string) string {
	t.Helper()
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Scheme+"://"+loc.Host+loc.Path != webApp+oidc.SignInPath {
		t.Fatalf("authorize: got %d to %q, want a redirect to the web app's sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("authRequestID")
}

// session signs the user in with identity's API, as the web app does.
func (w *world) session(t testing.TB) string {
	t.Helper()
	token, _, err := w.env.Service.Login(context.Background(), w.email, identitytest.Password)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return token
}

// answer posts the web app's allow or deny for request id with token and
// returns the status and the answer's redirect_to.
func (w *world) answer(t testing.TB, id, decision, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, identitytest.Issuer+"/oauth2/requests/"+id+"/"+decision, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.rp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.RedirectTo
}

// follow opens u in browser b and returns where it is redirected.
func follow(t testing.TB, b *http.Client, u string) *url.URL {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET %s: got status %d, want a redirect", u, resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// signIn runs the flow from authURL as the web app does (sign in,
// allow) and returns the callback's redirect to the client.
func (w *world) signIn(t testing.TB, authURL string) *url.URL {
	t.Helper()
	b := w.browser(t)
	id := w.authorize(t, b, authURL)
	status, next := w.answer(t, id, "allow", w.session(t))
	if status != http.StatusOK || !strings.HasPrefix(next, identitytest.Issuer+oidc.CallbackPath+"?") {
		t.Fatalf("allow: got %d %q, want 200 and the callback", status, next)
	}
	return follow(t, b, next)
}

func get(t testing.TB, c *http.Client, u string, want int) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: got %d, want %d: %s", u, resp.StatusCode, want, body)
	}
	return string(body)
}

// code runs the flow and returns the code, checking state.
func (w *world) code(t testing.TB, conf *oauth2.Config, opts ...oauth2.AuthCodeOption) string {
	t.Helper()
	loc := w.signIn(t, conf.AuthCodeURL("state-1", opts...))
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI {
		t.Fatalf("redirected to %s, want %s", got, redirectURI)
	}
	if got := loc.Query().Get("state"); got != "state-1" {
		t.Fatalf("state: got %q, want state-1", got)
	}
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", loc)
	}
	return code
}

// tokenCall posts to the token-family endpoints with the client's basic
// credentials and returns the status and the JSON answer.
func (w *world) tokenCall(t testing.TB, path string, form url.Values, clientID, secret string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, identitytest.Issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	} else {
		form.Set("client_id", clientID)
		req.Body = io.NopCloser(strings.NewReader(form.Encode()))
	}
	resp, err := w.rp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (w *world) active(t testing.TB, c identity.OIDCClient, secret, token string) bool {
	t.Helper()
	status, out := w.tokenCall(t, "/oauth2/introspect", url.Values{"token": {token}}, c.ID, secret)
	if status != http.StatusOK {
		t.Fatalf("introspect: got %d %v", status, out)
	}
	return out["active"] == true
}

func (w *world) userinfoStatus(t testing.TB, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, identitytest.Issuer+"/oauth2/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := w.rp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestCodeFlowWithARealRelyingParty(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		provider, conf := w.relyingParty(t, c, secret)
		verifier := oauth2.GenerateVerifier()
		code := w.code(t, conf, oauth2.S256ChallengeOption(verifier), gooidc.Nonce("n-1"))
		tok, err := conf.Exchange(w.ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		raw, _ := tok.Extra("id_token").(string)
		idt, err := provider.Verifier(&gooidc.Config{ClientID: c.ID}).Verify(w.ctx, raw)
		if err != nil {
			t.Fatalf("verify the ID token against the discovery key set: %v", err)
		}
		if idt.Nonce != "n-1" || idt.Subject != w.admin.User.ID {
			t.Errorf("ID token: got nonce %q sub %q, want n-1 and %s", idt.Nonce, idt.Subject, w.admin.User.ID)
		}
		var claims struct {
			Accounts []struct{ ID, Role string } `json:"accounts"`
		}
		if err := idt.Claims(&claims); err != nil || !hasAccount(claims.Accounts, w.account, "owner") {
			t.Errorf("ID token accounts claim: got %+v (%v), want %s as owner", claims.Accounts, err, w.account)
		}
		kid, _ := w.env.Ring.Signer()
		if !strings.Contains(string(headerOf(t, raw)), kid) {
			t.Errorf("ID token header %s does not name the current signer %s", headerOf(t, raw), kid)
		}

		info, err := provider.UserInfo(w.ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			t.Fatalf("userinfo: %v", err)
		}
		if info.Email != w.email || info.Subject != w.admin.User.ID {
			t.Errorf("userinfo: got %s %s, want %s", info.Email, info.Subject, w.email)
		}
		if !w.active(t, c, secret, tok.AccessToken) {
			t.Errorf("introspection of a fresh access token: got inactive")
		}
		if tok.RefreshToken == "" {
			t.Fatalf("no refresh token for offline_access")
		}

		// Refresh rotates; the old refresh token presented again revokes the chain.
		status, r2 := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, c.ID, secret)
		if status != http.StatusOK {
			t.Fatalf("refresh: got %d %v", status, r2)
		}
		rt2, at2 := r2["refresh_token"].(string), r2["access_token"].(string)
		if rt2 == "" || rt2 == tok.RefreshToken {
			t.Fatalf("refresh did not rotate: got %q", rt2)
		}
		if !w.active(t, c, secret, at2) {
			t.Errorf("the refreshed access token: got inactive")
		}
		if status, out := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, c.ID, secret); status != http.StatusBadRequest {
			t.Fatalf("reuse of a rotated refresh token: got %d %v, want 400", status, out)
		}
		if status, _ := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt2}}, c.ID, secret); status != http.StatusBadRequest {
			t.Errorf("the chain's newest refresh token after reuse: got %d, want 400", status)
		}
		if w.active(t, c, secret, at2) || w.active(t, c, secret, tok.AccessToken) {
			t.Errorf("access tokens of a reused chain: got active, want revoked")
		}
	})
}

func hasAccount(as []struct{ ID, Role string }, id, role string) bool {
	for _, a := range as {
		if a.ID == id && a.Role == role {
			return true
		}
	}
	return false
}

func headerOf(t testing.TB, jwt string) []byte {
	t.Helper()
	h, _, _ := strings.Cut(jwt, ".")
	b, err := base64URL(h)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	return b
}

// TestIDTokensFollowKeyRotationAndWithdrawal: ID tokens are signed by
// identity's current key; after a rotation the relying party verifies the
// new key from the discovery key set, and a withdrawn key leaves it.
func TestIDTokensFollowKeyRotationAndWithdrawal(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		provider, conf := w.relyingParty(t, c, secret)
		verify := func() string {
			t.Helper()
			v := oauth2.GenerateVerifier()
			tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			raw, _ := tok.Extra("id_token").(string)
			if _, err := provider.Verifier(&gooidc.Config{ClientID: c.ID}).Verify(w.ctx, raw); err != nil {
				t.Fatalf("verify: %v", err)
			}
			return string(headerOf(t, raw))
		}
		oldKID, _ := w.env.Ring.Signer()
		if h := verify(); !strings.Contains(h, oldKID) {
			t.Fatalf("header %s, want kid %s", h, oldKID)
		}
		ctx := context.Background()
		w.env.Clock.Advance(time.Second) // the newer key is the one created later
		next, err := w.env.Keys.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.env.Ring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if h := verify(); !strings.Contains(h, next.KID) {
			t.Errorf("after rotation: header %s, want kid %s", h, next.KID)
		}
		if err := w.env.Keys.Withdraw(ctx, oldKID); err != nil {
			t.Fatal(err)
		}
		if err := w.env.Ring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		keys := get(t, w.rp, identitytest.Issuer+"/oauth2/keys", http.StatusOK)
		if strings.Contains(keys, oldKID) || !strings.Contains(keys, next.KID) {
			t.Errorf("key set after withdrawal: got %s, want %s only", keys, next.KID)
		}
	})
}
