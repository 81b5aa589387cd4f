package oidc_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestCodeExchangedOnceUnderRace: of concurrent exchanges of one code at
// the token endpoint, exactly one gets tokens; the others are second
// uses, so what the one got is revoked.
func TestCodeExchangedOnceUnderRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		v := oauth2.GenerateVerifier()
		code := w.code(t, conf, oauth2.S256ChallengeOption(v))
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {v}}.Encode()

		const exchanges = 20
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			start   = make(chan struct{})
			status  = map[int]int{}
			granted string
			failure error
		)
		for range exchanges {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, "http://identity.test/oauth2/token", strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(secret))
				<-start
				resp, err := w.rp.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failure = err
					return
				}
				defer resp.Body.Close()
				status[resp.StatusCode]++
				if resp.StatusCode == http.StatusOK {
					var out struct {
						AccessToken string `json:"access_token"`
					}
					_ = json.NewDecoder(resp.Body).Decode(&out)
					granted = out.AccessToken
				}
			}()
		}
		close(start)
		wg.Wait()
		if failure != nil {
			t.Fatal(failure)
		}
		if status[http.StatusOK] != 1 || status[http.StatusBadRequest] != exchanges-1 {
			t.Fatalf("exchanges by status: got %v, want one 200 and %d 400", status, exchanges-1)
		}
		if w.active(t, c, secret, granted) {
			t.Errorf("the one exchange's access token after the others: got active, want revoked")
		}
	})
}

// TestRefusedExchangeSpendsTheCode: a code gets one try; an exchange
// refused (here a wrong PKCE verifier) spends it.
func TestRefusedExchangeSpendsTheCode(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		v := oauth2.GenerateVerifier()
		code := w.code(t, conf, oauth2.S256ChallengeOption(v))
		exchange := func(verifier string) int {
			status, _ := w.tokenCall(t, "/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {redirectURI}, "code_verifier": {verifier}}, c.ID, secret)
			return status
		}
		if got := exchange(oauth2.GenerateVerifier()); got != http.StatusBadRequest {
			t.Fatalf("wrong verifier: got %d, want 400", got)
		}
		if got := exchange(v); got != http.StatusBadRequest {
			t.Errorf("the right verifier after a refused exchange: got %d, want 400", got)
		}
	})
}
