package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/testproc"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

const courierSecret = "billing-receipt-test-secret-0123456789abcdef"

// startCourier runs courier itself (its local mail adapter, as platform
// dev runs it) admitting billing's service credential; it returns its URL.
func startCourier(t *testing.T, engine sqldb.Engine) string {
	t.Helper()
	db := sqltest.URL(t, engine)
	if err := couriercmd.Migrate(context.Background(), db); err != nil {
		t.Fatalf("courier migrate: %v", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"DATABASE_URL": db, "COURIER_ENV": "development", "COURIER_SECRET_BOX_KEY": base64.StdEncoding.EncodeToString(key),
		"COURIER_MAIL_ADAPTER": couriercmd.AdapterLocal, "COURIER_LOCAL_DIR": t.TempDir(),
		"COURIER_MAIL_FROM": "Platform <no-reply@example.com>", "COURIER_SERVICE_TOKENS": "billing:" + courierSecret,
	}
	var cfg couriercmd.Config
	if err := config.Load(context.Background(), func(k string) string { return env[k] }, &cfg); err != nil {
		t.Fatalf("courier config: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- couriercmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("courier: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	testutil.Eventually(t, 10*time.Second, "courier ready", func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
	return base
}

type mailboxMessage struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

func mailbox(t *testing.T, courierURL string) []mailboxMessage {
	t.Helper()
	res, err := http.Get(courierURL + "/dev/mail.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var box struct{ Messages []mailboxMessage }
	if err := json.NewDecoder(res.Body).Decode(&box); err != nil {
		t.Fatal(err)
	}
	return box.Messages
}

// TestReceiptsThroughCourier: a paid checkout queues a receipt with the
// payment and a declined card a payment_failed mail to the account's
// customer; the relay hands them to a real courier (its templates render
// them) once each, and a courier that is down only delays them.
func TestReceiptsThroughCourier(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`)
		if r.status != 201 {
			t.Fatalf("checkout = %d %s", r.status, r.raw)
		}
		pageURL := r.body["checkout"].(map[string]any)["url"].(string)
		for _, card := range []string{"4000 0000 0000 0002", testproc.CardPays} {
			resp, err := e.client.PostForm(pageURL, url.Values{"email": {"buyer@example.com"}, "card": {card}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		ctx := context.Background()
		down := &billing.MailRelay{Store: e.store, URL: "http://127.0.0.1:1", Token: "billing:" + courierSecret,
			PublicURL: "http://web.example", Client: &http.Client{Timeout: time.Second}}
		if sent, err := down.Once(ctx); err != nil || sent != 0 {
			t.Fatalf("relay with courier down sent %d, %v", sent, err)
		}
		if n := e.count(`SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL AND attempts = 1`); n != 2 {
			t.Fatalf("waiting mails after courier was down = %d, want 2", n)
		}
		if _, err := e.db.Exec(ctx, `UPDATE mail_outbox SET next_attempt_at = $1`, time.Now().Add(-time.Second).UTC()); err != nil {
			t.Fatal(err)
		}
		courierURL := startCourier(t, engine)
		relay := &billing.MailRelay{Store: e.store, URL: courierURL, Token: "billing:" + courierSecret, PublicURL: "http://web.example"}
		if sent, err := relay.Once(ctx); err != nil || sent != 2 {
			t.Fatalf("relay sent %d, %v; want 2", sent, err)
		}
		if sent, err := relay.Once(ctx); err != nil || sent != 0 {
			t.Errorf("relay again sent %d, %v; want 0", sent, err)
		}
		var got []mailboxMessage
		testutil.Eventually(t, 10*time.Second, "two mails in courier's mailbox", func() bool {
			got = mailbox(t, courierURL)
			return len(got) >= 2
		})
		var receipt, failed *mailboxMessage
		for i, m := range got {
			switch {
			case strings.Contains(m.Text, "Thank you for your payment"):
				receipt = &got[i]
			case strings.Contains(m.Text, "could not be collected"):
				failed = &got[i]
			}
		}
		if receipt == nil || !strings.Contains(receipt.To, "buyer@example.com") || !strings.Contains(receipt.Text, "120.00 USD") ||
			!strings.Contains(receipt.Text, "Platform") || !strings.Contains(receipt.Text, "http://web.example/app/accounts/"+team+"/billing") {
			t.Errorf("receipt = %+v", receipt)
		}
		if failed == nil || !strings.Contains(failed.To, "owner@example.com") || !strings.Contains(failed.Text, "card declined") {
			t.Errorf("payment_failed mail = %+v", failed)
		}
		if len(got) != 2 {
			t.Errorf("mailbox holds %d messages, want 2", len(got))
		}
	})
}
