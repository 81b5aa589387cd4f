package oidc_test

import (
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// BenchmarkProvider measures, in process and per engine, the provider's
// two hot endpoints beside identity's authenticated read, as bench/oidc.go
// does over the network: userinfo with one access token, and the code
// exchange with fresh codes made outside the timer.
func BenchmarkProvider(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			w := newWorld(b, engine)
			c, secret := w.client(b, false)
			_, conf := w.relyingParty(b, c, secret)
			conf.Scopes = []string{"openid", "email"}
			v := oauth2.GenerateVerifier()
			sess := w.session(b)
			code := func() string {
				loc := w.signIn(b, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(v)))
				return loc.Query().Get("code")
			}
			exchange := func(code string) (int, map[string]any) {
				return w.tokenCall(b, "/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
					"redirect_uri": {redirectURI}, "code_verifier": {v}}, c.ID, secret)
			}
			_, tok := exchange(code())
			access, _ := tok["access_token"].(string)
			b.Run("Read", func(b *testing.B) {
				for b.Loop() {
					req, _ := http.NewRequest("GET", identitytest.Issuer+"/v1/accounts/"+w.account, nil)
					req.Header.Set("Authorization", "Bearer "+sess)
					resp, err := w.rp.Do(req)
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Fatalf("read: %v %v", resp, err)
					}
					resp.Body.Close()
				}
			})
			b.Run("Userinfo", func(b *testing.B) {
				for b.Loop() {
					if got := w.userinfoStatus(b, access); got != http.StatusOK {
						b.Fatalf("userinfo: %d", got)
					}
				}
			})
			b.Run("CodeExchange", func(b *testing.B) {
				codes := make([]string, 0, b.N)
				for range b.N {
					codes = append(codes, code())
				}
				b.ResetTimer()
				for i := range b.N {
					if status, out := exchange(codes[i]); status != http.StatusOK {
						b.Fatalf("exchange: %d %v", status, out)
					}
				}
			})
		})
	}
}
