package mailrelay_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/mailrelay"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

var ctx = context.Background()

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// courier is a real courier process's server (couriercmd.Serve with the
// local mail adapter, as platform dev runs it) that can be stopped and
// started again on the same address.
type courier struct {
	t      *testing.T
	cfg    couriercmd.Config
	addr   string
	cancel context.CancelFunc
	done   chan error
}

const secret = "identity-relay-test-secret-0123456789abcdef"

func newCourier(t *testing.T, engine sqldb.Engine) *courier {
	t.Helper()
	db := sqltest.URL(t, engine)
	if err := couriercmd.Migrate(ctx, db); err != nil {
		t.Fatalf("courier migrate: %v", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"DATABASE_URL":           db,
		"COURIER_ENV":            "development",
		"COURIER_SECRET_BOX_KEY": base64.StdEncoding.EncodeToString(key),
		"COURIER_MAIL_ADAPTER":   couriercmd.AdapterLocal,
		"COURIER_LOCAL_DIR":      t.TempDir(),
		"COURIER_MAIL_FROM":      "Platform <no-reply@example.com>",
		"COURIER_SERVICE_TOKENS": "identity:" + secret,
	}
	var cfg couriercmd.Config
	if err := config.Load(context.Background(), func(k string) string { return env[k] }, &cfg); err != nil {
		t.Fatalf("courier config: %v", err)
	}
	c := &courier{t: t, cfg: cfg}
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *courier) start() {
	c.t.Helper()
	addr := c.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		c.t.Fatalf("courier listen: %v", err)
	}
	c.addr = ln.Addr().String()
	run, cancel := context.WithCancel(ctx)
	c.cancel, c.done = cancel, make(chan error, 1)
	go func() { c.done <- couriercmd.Serve(run, c.cfg, discard(), ln) }()
	testutil.Eventually(c.t, 5*time.Second, "courier ready", func() bool {
		res, err := http.Get(c.url() + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
}

func (c *courier) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	if err := <-c.done; err != nil {
		c.t.Errorf("courier: %v", err)
	}
	c.cancel = nil
}

func (c *courier) url() string { return "http://" + c.addr }

type message struct {
	To   string `json:"to"`
	Text string `json:"text"`
}

// mailbox returns the local mailbox's messages to address.
func (c *courier) mailbox(address string) []message {
	c.t.Helper()
	res, err := http.Get(c.url() + "/dev/mail.json")
	if err != nil {
		c.t.Fatalf("mailbox: %v", err)
	}
	defer res.Body.Close()
	var box struct{ Messages []message }
	if err := json.NewDecoder(res.Body).Decode(&box); err != nil {
		c.t.Fatalf("mailbox: %v", err)
	}
	var out []message
	for _, m := range box.Messages {
		if strings.Contains(m.To, address) {
			out = append(out, m)
		}
	}
	return out
}

func pending(t *testing.T, env *identitytest.Env) (waiting, sealed int) {
	t.Helper()
	if err := env.DB.QueryRow(ctx, `SELECT count(*), count(data_sealed) FROM mail_outbox WHERE sent_at IS NULL`).Scan(&waiting, &sealed); err != nil {
		t.Fatal(err)
	}
	return waiting, sealed
}

// TestRelayThroughCourier: verification mail reaches a real courier's
// local mailbox with its link; while courier is down the flow still
// succeeds and the mail waits, and it goes out once courier is back.
func TestRelayThroughCourier(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		c := newCourier(t, engine)
		relay := &mailrelay.Relay{
			Store: env.Store, Sealer: env.Service.MailSealer(),
			URL: c.url(), Token: "identity:" + secret,
			Client: &http.Client{Timeout: 5 * time.Second}, Logger: discard(), Now: env.Clock.Now,
		}

		env.Register(t, "ada@example.com")
		link := "token=" + env.LinkToken(t, "ada@example.com", identity.TemplateVerifyEmail)
		if n, err := relay.Once(ctx); err != nil || n != 1 {
			t.Fatalf("relay = %d, %v; want 1 sent", n, err)
		}
		if w, s := pending(t, env); w != 0 || s != 0 {
			t.Errorf("after relaying: %d waiting, %d still sealed; want none", w, s)
		}
		testutil.Eventually(t, 10*time.Second, "verification mail in the mailbox", func() bool {
			m := c.mailbox("ada@example.com")
			return len(m) == 1 && strings.Contains(m[0].Text, link)
		})
		// Relaying again sends nothing: the row is done.
		if n, err := relay.Once(ctx); err != nil || n != 0 {
			t.Errorf("second relay = %d, %v; want 0", n, err)
		}

		// Courier down: the reset still answers, the mail waits sealed.
		c.stop()
		if err := env.Service.RequestPasswordReset(ctx, "ada@example.com"); err != nil {
			t.Fatalf("reset with courier down: %v", err)
		}
		resetLink := "token=" + env.LinkToken(t, "ada@example.com", identity.TemplatePasswordReset)
		if n, err := relay.Once(ctx); err != nil || n != 0 {
			t.Fatalf("relay with courier down = %d, %v; want 0 and no error", n, err)
		}
		var attempts int
		var lastErr string
		if err := env.DB.QueryRow(ctx, `SELECT attempts, last_error FROM mail_outbox WHERE sent_at IS NULL`).Scan(&attempts, &lastErr); err != nil {
			t.Fatal(err)
		}
		if attempts != 1 || strings.Contains(lastErr, resetLink) {
			t.Errorf("attempts = %d, last_error = %q; want 1, without the link", attempts, lastErr)
		}
		// Not due again until the back-off passes.
		c.start()
		if n, _ := relay.Once(ctx); n != 0 {
			t.Errorf("relayed %d before the back-off passed", n)
		}
		env.Clock.Advance(10 * time.Minute)
		if n, err := relay.Once(ctx); err != nil || n != 1 {
			t.Fatalf("relay after courier returned = %d, %v; want 1", n, err)
		}
		testutil.Eventually(t, 10*time.Second, "reset mail in the mailbox", func() bool {
			for _, m := range c.mailbox("ada@example.com") {
				if strings.Contains(m.Text, resetLink) {
					return true
				}
			}
			return false
		})
	})
}

// TestRelayWrongCredential: courier refuses a wrong credential and the
// mail stays queued, sealed.
func TestRelayWrongCredential(t *testing.T) {
	env := identitytest.New(t, sqldb.SQLite, identitytest.Config{})
	c := newCourier(t, sqldb.SQLite)
	relay := &mailrelay.Relay{Store: env.Store, Sealer: env.Service.MailSealer(), URL: c.url(), Token: "identity:" + strings.Repeat("x", 40), Logger: discard(), Now: env.Clock.Now}
	env.Register(t, "ada@example.com")
	if n, err := relay.Once(ctx); err != nil || n != 0 {
		t.Fatalf("relay = %d, %v; want 0 sent", n, err)
	}
	if w, s := pending(t, env); w != 1 || s != 1 {
		t.Errorf("%d waiting, %d sealed; want the mail kept", w, s)
	}
}
