package oidc_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// requestView is what identity's request view says of request id to a
// caller with session token ("" for none).
type requestView struct {
	SignInRequired *bool `json:"sign_in_required"`
	Consented      *bool `json:"consented"`
}

func (w *world) requestView(t *testing.T, id, token string) requestView {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, identitytest.Issuer+"/oauth2/requests/"+id, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.rp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v requestView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK || v.SignInRequired == nil || v.Consented == nil {
		t.Fatalf("request view: got %d (%v), want 200 with sign_in_required and consented", resp.StatusCode, err)
	}
	return v
}

// signInRequired is the request view's sign_in_required.
func (w *world) signInRequired(t *testing.T, id, token string) bool {
	t.Helper()
	return *w.requestView(t, id, token).SignInRequired
}

// consented is the request view's consented.
func (w *world) consented(t *testing.T, id, token string) bool {
	t.Helper()
	return *w.requestView(t, id, token).Consented
}

// TestFreshSignIn: prompt=login and max_age make a session that signed in
// too long ago answer nothing until the user signs in again, and the ID
// token's auth_time is when the answering session signed in.
func TestFreshSignIn(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		provider, conf := w.relyingParty(t, c, secret)
		// Without the accounts scope the exchange reads no user for the
		// ID token: sub must still be there.
		conf.Scopes = []string{gooidc.ScopeOpenID, "email"}
		tests := []struct {
			name   string
			params []oauth2.AuthCodeOption
			// age is how long before the request the old session signed in.
			age time.Duration
			// oldOK: the old session may answer.
			oldOK bool
		}{
			{"NoConstraint", nil, time.Hour, true},
			{"PromptLogin", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "login")}, time.Minute, false},
			{"MaxAgeExceeded", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("max_age", "60")}, 2 * time.Minute, false},
			{"MaxAgeMet", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("max_age", "600")}, 2 * time.Minute, true},
			{"MaxAgeZero", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("max_age", "0")}, time.Second, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				old := w.session(t)
				oldAt := w.env.Clock.Now()
				w.env.Clock.Advance(tt.age)
				v := oauth2.GenerateVerifier()
				b := w.browser(t)
				id := w.authorize(t, b, conf.AuthCodeURL("state-1", append(tt.params, oauth2.S256ChallengeOption(v))...))
				if got := w.signInRequired(t, id, ""); !got {
					t.Errorf("sign_in_required without a session: got false, want true")
				}
				if got := w.signInRequired(t, id, old); got == tt.oldOK {
					t.Errorf("sign_in_required with a session %s old: got %v, want %v", tt.age, got, !tt.oldOK)
				}
				signedIn := oldAt
				status, next := w.answer(t, id, "allow", old)
				if !tt.oldOK {
					if status != http.StatusUnauthorized {
						t.Fatalf("allow with the old session: got %d, want 401", status)
					}
					// The user signs in anew on the sign-in page.
					w.env.Clock.Advance(5 * time.Second)
					answering := w.session(t)
					signedIn = w.env.Clock.Now()
					if got := w.signInRequired(t, id, answering); got {
						t.Errorf("sign_in_required with a session signed in for the request: got true, want false")
					}
					status, next = w.answer(t, id, "allow", answering)
				}
				if status != http.StatusOK {
					t.Fatalf("allow: got %d, want 200", status)
				}
				// The answer comes later than the sign-in: auth_time is the sign-in.
				w.env.Clock.Advance(30 * time.Second)
				loc := follow(t, b, next)
				tok, err := conf.Exchange(w.ctx, loc.Query().Get("code"), oauth2.VerifierOption(v))
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				raw, _ := tok.Extra("id_token").(string)
				idt, err := provider.Verifier(&gooidc.Config{ClientID: c.ID}).Verify(w.ctx, raw)
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				if idt.Subject != w.admin.User.ID {
					t.Errorf("ID token sub: got %q, want %s", idt.Subject, w.admin.User.ID)
				}
				var claims struct {
					AuthTime int64 `json:"auth_time"`
				}
				if err := idt.Claims(&claims); err != nil || claims.AuthTime != signedIn.Unix() {
					t.Errorf("auth_time: got %d (%v), want %d (the session's sign-in)", claims.AuthTime, err, signedIn.Unix())
				}
			})
		}
	})
}

// TestPromptNone: a prompt=none request shows no page; the web app ends
// it at the callback with login_required or consent_required, which go
// to the client's redirect URI with the state, and nothing else can end
// or answer it.
func TestPromptNone(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		start := func(t *testing.T, prompt string) (*http.Client, string) {
			b := w.browser(t)
			return b, w.authorize(t, b, conf.AuthCodeURL("state-1", oauth2.SetAuthURLParam("prompt", prompt), oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		}
		callback := func(id, e string) string {
			return identitytest.Issuer + oidc.CallbackPath + "?" + url.Values{"id": {id}, "error": {e}}.Encode()
		}
		for _, e := range []string{"login_required", "consent_required"} {
			t.Run(e, func(t *testing.T) {
				b, id := start(t, "none")
				loc := follow(t, b, callback(id, e))
				if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURI || loc.Query().Get("error") != e || loc.Query().Get("state") != "state-1" {
					t.Errorf("callback: got %s, want %s with error=%s and the state", loc, redirectURI, e)
				}
			})
		}
		t.Run("NoAnswerForPromptNone", func(t *testing.T) {
			_, id := start(t, "none")
			if status, _ := w.answer(t, id, "allow", w.session(t)); status != http.StatusNotFound {
				t.Errorf("allow: got %d, want 404", status)
			}
		})
		refusals := []struct{ name, prompt, err string }{
			{"OtherErrorForPromptNone", "none", "access_denied"},
			{"LoginRequiredWithoutPromptNone", "login", "login_required"},
		}
		for _, tt := range refusals {
			t.Run(tt.name, func(t *testing.T) {
				b, id := start(t, tt.prompt)
				loc := follow(t, b, callback(id, tt.err))
				if !strings.HasPrefix(loc.String(), webApp+oidc.ErrorPath) {
					t.Errorf("callback: got %s, want the web app's error page", loc)
				}
			})
		}
	})
}
