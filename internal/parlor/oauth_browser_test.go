package parlor_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/pquerna/otp/totp"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/parlor"
)

// application is a relying party as a company would write one: go-oidc
// and x/oauth2, the code flow with PKCE and a nonce, the ID token
// verified against the discovery document's key set.
type application struct {
	srv      *httptest.Server
	provider *gooidc.Provider
	conf     oauth2.Config
	mu       sync.Mutex
	pending  map[string][2]string // state → verifier, nonce
	// signedIn receives the verified ID token of each sign-in.
	signedIn chan *gooidc.IDToken
}

func newApplication(t *testing.T) *application {
	t.Helper()
	a := &application{pending: map[string][2]string{}, signedIn: make(chan *gooidc.IDToken, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", a.login)
	mux.HandleFunc("GET /callback", a.callback)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// connect discovers the provider and takes the registered client.
func (a *application) connect(t *testing.T, issuer string, rp relyingParty) {
	t.Helper()
	p, err := gooidc.NewProvider(context.Background(), issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	a.provider = p
	a.conf = oauth2.Config{ClientID: rp.ClientID, ClientSecret: rp.Secret, Endpoint: p.Endpoint(), RedirectURL: rp.RedirectURI,
		Scopes: []string{gooidc.ScopeOpenID, "email", "accounts"}}
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *application) login(w http.ResponseWriter, r *http.Request) {
	state, verifier, nonce := randomHex(), oauth2.GenerateVerifier(), randomHex()
	a.mu.Lock()
	a.pending[state] = [2]string{verifier, nonce}
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "rp_state", Value: state, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), gooidc.Nonce(nonce)}
	if r.URL.Query().Get("silent") != "" {
		// A silent sign-in: the provider may show no page.
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "none"))
	}
	http.Redirect(w, r, a.conf.AuthCodeURL(state, opts...), http.StatusFound)
}

func (a *application) callback(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<!doctype html><title>Refused</title><main><h1>Refused</h1><p>%s</p></main>", html.EscapeString(fmt.Sprintf(format, args...)))
	}
	state := r.URL.Query().Get("state")
	c, err := r.Cookie("rp_state")
	if err != nil || c.Value != state {
		fail("the state is not this browser's")
		return
	}
	a.mu.Lock()
	p, ok := a.pending[state]
	delete(a.pending, state)
	a.mu.Unlock()
	if !ok {
		fail("unknown state")
		return
	}
	if e := r.URL.Query().Get("error"); e != "" {
		fail("the provider answered %s", e)
		return
	}
	tok, err := a.conf.Exchange(r.Context(), r.URL.Query().Get("code"), oauth2.VerifierOption(p[0]))
	if err != nil {
		fail("code exchange: %v", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := a.provider.Verifier(&gooidc.Config{ClientID: a.conf.ClientID}).Verify(r.Context(), raw)
	if err != nil {
		fail("ID token: %v", err)
		return
	}
	if idt.Nonce != p[1] {
		fail("the nonce is not this sign-in's")
		return
	}
	var claims struct {
		Email string `json:"email"`
	}
	_ = idt.Claims(&claims)
	info, err := a.provider.UserInfo(r.Context(), oauth2.StaticTokenSource(tok))
	if err != nil {
		fail("userinfo: %v", err)
		return
	}
	a.signedIn <- idt
	fmt.Fprintf(w, "<!doctype html><html lang=\"en\"><title>Shop</title><main><h1>Welcome to the shop</h1><p>Signed in as %s (%s)</p></main></html>",
		html.EscapeString(info.Email), html.EscapeString(idt.Subject))
}

// TestSignInWithThePlatformInABrowser drives the whole code flow in
// Chromium: an application's sign-in link, parlor's sign-in page, the MFA
// step, the consent page, and back to the application, which verifies
// the ID token against the discovery document's key set; then a silent
// sign-in (prompt=none) on the remembered consent, without a page.
func TestSignInWithThePlatformInABrowser(t *testing.T) {
	exe := findBrowser(t)
	st := startStack(t)
	app := newApplication(t)
	rp := registerApp(t, st, "Acme Shop", app.srv.URL+"/callback")
	app.connect(t, st.IdentityURL, rp)

	// The user has MFA on (enrolled through the API).
	ctx := context.Background()
	api := parlor.NewClient(st.GatewayURL, 5*time.Second)
	en, err := api.EnrolTOTP(ctx, rp.Token, oauthPassword)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := totp.GenerateCode(en.Secret, time.Now())
	if err := api.ConfirmTOTP(ctx, rp.Token, code); err != nil {
		t.Fatal(err)
	}

	axeScript, err := os.ReadFile(filepath.Join("testdata", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	step := 0
	b := newBrowser(t, exe, "customer", st.GatewayURL, t.ArtifactDir(), string(axeScript), &step)
	b.do("oauth-signin", []string{"Sign in", "continue to Acme Shop"}, chromedp.Navigate(app.srv.URL+"/login"))
	b.do("oauth-mfa", []string{"Two-factor authentication", "Enter the 6-digit code"},
		chromedp.SendKeys(chromedp.CSS(`#email`), rp.Email),
		chromedp.SendKeys(chromedp.CSS(`#password`), oauthPassword),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	// The next step's code: the one that confirmed the enrolment is spent.
	next, _ := totp.GenerateCode(en.Secret, time.Now().Add(30*time.Second))
	b.do("oauth-consent", []string{"Allow Acme Shop?", rp.Email, "See your email address", "See the accounts you belong to"},
		chromedp.SendKeys(chromedp.CSS(`#code`), next),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	b.do("back-at-the-application", []string{"Welcome to the shop", "Signed in as " + rp.Email},
		chromedp.Click(chromedp.CSS(`button[value=allow]`)))

	select {
	case idt := <-app.signedIn:
		if idt.Issuer != st.IdentityURL || idt.Audience[0] != rp.ClientID {
			t.Errorf("ID token: issuer %q audience %v, want %s for %s", idt.Issuer, idt.Audience, st.IdentityURL, rp.ClientID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the application verified no ID token")
	}

	// The consent is remembered: a second, silent sign-in (prompt=none)
	// goes through the provider and the web app without a page and ends
	// signed in at the application (a page, or no consent, would have
	// ended it with an error).
	b.do("silent-sign-in", []string{"Welcome to the shop", "Signed in as " + rp.Email},
		chromedp.Navigate(app.srv.URL+"/login?silent=1"))
	select {
	case idt := <-app.signedIn:
		if idt.Audience[0] != rp.ClientID {
			t.Errorf("silent sign-in's ID token: audience %v, want %s", idt.Audience, rp.ClientID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the silent sign-in verified no ID token")
	}
}
