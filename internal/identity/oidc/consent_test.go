package oidc_test

import (
	"net/http"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestConsentRemembered: once the user allowed an application, a request
// for scopes the consent covers is answered without a page (resume), as
// is prompt=none; prompt=consent and new scopes ask again; withdrawing
// the consent revokes the application's tokens and asks again.
func TestConsentRemembered(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		conf.Scopes = []string{gooidc.ScopeOpenID, "email"}
		sess := w.session(t)
		// start begins a request in a new browser; it returns the browser
		// and the request's id.
		start := func(t *testing.T, v string, opts ...oauth2.AuthCodeOption) (*http.Client, string) {
			t.Helper()
			b := w.browser(t)
			return b, w.authorize(t, b, conf.AuthCodeURL("state-1", append(opts, oauth2.S256ChallengeOption(v))...))
		}
		// finish follows an answer to the client and exchanges the code.
		finish := func(t *testing.T, b *http.Client, next, v string) *oauth2.Token {
			t.Helper()
			loc := follow(t, b, next)
			if loc.Query().Get("state") != "state-1" || loc.Query().Get("code") == "" {
				t.Fatalf("callback: got %s, want a code and the state", loc)
			}
			tok, err := conf.Exchange(w.ctx, loc.Query().Get("code"), oauth2.VerifierOption(v))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			return tok
		}

		v := oauth2.GenerateVerifier()
		b, id := start(t, v)
		if w.consented(t, id, sess) {
			t.Error("consented before the user allowed anything: got true")
		}
		if status, _ := w.answer(t, id, "resume", sess); status != http.StatusForbidden {
			t.Errorf("resume without a consent: got %d, want 403", status)
		}
		status, next := w.answer(t, id, "allow", sess)
		if status != http.StatusOK {
			t.Fatalf("allow: got %d, want 200", status)
		}
		finish(t, b, next, v)

		var first *oauth2.Token
		for _, tt := range []struct {
			name string
			opts []oauth2.AuthCodeOption
		}{
			{"Again", nil},
			{"PromptNone", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "none")}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				v := oauth2.GenerateVerifier()
				b, id := start(t, v, tt.opts...)
				if !w.consented(t, id, sess) {
					t.Fatal("consented after the user allowed these scopes: got false")
				}
				status, next := w.answer(t, id, "resume", sess)
				if status != http.StatusOK {
					t.Fatalf("resume: got %d, want 200", status)
				}
				tok := finish(t, b, next, v)
				if first == nil {
					first = tok
				}
			})
		}
		if first == nil {
			t.FailNow()
		}

		t.Run("PromptConsent", func(t *testing.T) {
			_, id := start(t, oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "consent"))
			if w.consented(t, id, sess) {
				t.Error("consented for prompt=consent: got true")
			}
			if status, _ := w.answer(t, id, "resume", sess); status != http.StatusForbidden {
				t.Errorf("resume for prompt=consent: got %d, want 403", status)
			}
		})
		t.Run("NewScope", func(t *testing.T) {
			wider := *conf
			wider.Scopes = []string{gooidc.ScopeOpenID, "email", "profile"}
			b := w.browser(t)
			id := w.authorize(t, b, wider.AuthCodeURL("state-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			if w.consented(t, id, sess) {
				t.Error("consented for a scope never allowed: got true")
			}
		})

		t.Run("Withdrawn", func(t *testing.T) {
			if got := w.userinfoStatus(t, first.AccessToken); got != http.StatusOK {
				t.Fatalf("userinfo before the withdrawal: got %d, want 200", got)
			}
			// A code issued before the withdrawal and not yet exchanged.
			pv := oauth2.GenerateVerifier()
			pb, pid := start(t, pv)
			status, next := w.answer(t, pid, "resume", sess)
			if status != http.StatusOK {
				t.Fatalf("resume: got %d, want 200", status)
			}
			pending := follow(t, pb, next).Query().Get("code")
			req, _ := http.NewRequest(http.MethodDelete, identitytest.Issuer+"/v1/me/oidc_consents/"+c.ID, nil)
			req.Header.Set("Authorization", "Bearer "+sess)
			resp, err := w.rp.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE /v1/me/oidc_consents/{id}: got %d, want 204", resp.StatusCode)
			}
			// A token no longer honoured is RFC 6750's 401 invalid_token.
			if got := w.userinfoStatus(t, first.AccessToken); got != http.StatusUnauthorized {
				t.Errorf("userinfo after the withdrawal: got %d, want 401", got)
			}
			if _, err := conf.Exchange(w.ctx, pending, oauth2.VerifierOption(pv)); err == nil {
				t.Error("a code issued before the withdrawal was exchanged after it")
			}
			_, id := start(t, oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none"))
			if w.consented(t, id, sess) {
				t.Error("consented after the withdrawal: got true")
			}
			if status, _ := w.answer(t, id, "resume", sess); status != http.StatusForbidden {
				t.Errorf("resume after the withdrawal: got %d, want 403", status)
			}
		})
	})
}
