package mailrelay_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/mailrelay"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// TestRelayMFAEnabledNotice: turning TOTP on queues mfa_enabled_notice
// (no data), which a real courier accepts and delivers to the user.
func TestRelayMFAEnabledNotice(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		c := newCourier(t, engine)
		relay := &mailrelay.Relay{
			Store: env.Store, Sealer: env.Service.MailSealer(),
			URL: c.url(), Token: "identity:" + secret,
			Client: &http.Client{Timeout: 5 * time.Second}, Logger: discard(), Now: env.Clock.Now,
		}
		p := env.User(t, "ada@example.com")
		en, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password)
		if err != nil {
			t.Fatal(err)
		}
		code, err := totp.GenerateCodeCustom(en.Secret, env.Clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.ConfirmTOTP(ctx, p, code); err != nil {
			t.Fatalf("confirm: %v", err)
		}
		if n, err := relay.Once(ctx); err != nil || n != 2 { // verify_email and the notice
			t.Fatalf("relay = %d, %v; want 2 sent", n, err)
		}
		testutil.Eventually(t, 10*time.Second, "the MFA notice in the mailbox", func() bool {
			for _, m := range c.mailbox("ada@example.com") {
				if strings.Contains(m.Text, "Two-factor authentication was turned on") {
					return true
				}
			}
			return false
		})
	})
}
