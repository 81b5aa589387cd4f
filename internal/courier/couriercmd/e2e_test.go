package couriercmd

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/push"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// TestServeDeliversToTheLocalMailboxAndPublishes runs the whole service:
// a send over HTTP lands in the local mailbox through the send loop, and
// its events reach JetStream through the outbox publisher.
func TestServeDeliversToTheLocalMailboxAndPublishes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		broker := eventstest.Embedded(t)
		secret := strings.Repeat("s", 32)
		base := serve(t, map[string]string{"DATABASE_URL": migrated(t, engine), "EVENTS_URL": broker.URL,
			"COURIER_SERVICE_TOKENS": "identity:" + secret})
		req, _ := http.NewRequest("POST", base+"/v1/emails", strings.NewReader(
			`{"template":"invitation","to":"ann@example.com","data":{"link":"https://app.example.com/i/x","account_name":"Engines <Ltd>","inviter_email":"ada@example.com"}}`))
		req.Header.Set("Authorization", "Bearer identity:"+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 202 {
			t.Fatalf("POST /v1/emails = %d, want 202", res.StatusCode)
		}
		var box struct {
			Messages []struct{ To, Subject, Text, HTML string } `json:"messages"`
		}
		testutil.Eventually(t, 10*time.Second, "the message in /dev/mail.json", func() bool {
			res, err := http.Get(base + "/dev/mail.json")
			if err != nil {
				return false
			}
			defer res.Body.Close()
			return json.NewDecoder(res.Body).Decode(&box) == nil && len(box.Messages) == 1
		})
		m := box.Messages[0]
		if m.To != "ann@example.com" || m.Subject != "You are invited to Engines <Ltd>" || !strings.Contains(m.HTML, "Engines &lt;Ltd&gt;") {
			t.Errorf("mailbox message = %+v", m)
		}
		page, err := http.Get(base + "/dev/mail")
		if err != nil {
			t.Fatal(err)
		}
		page.Body.Close()
		if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET /dev/mail = %d %s", page.StatusCode, page.Header.Get("Content-Type"))
		}
		_, js := eventstest.Connect(t, broker)
		// The publisher declares the stream on its first batch, after the
		// send is answered: ReadStream would fail on a stream not there yet.
		testutil.Eventually(t, 10*time.Second, "the stream declared", func() bool {
			_, err := js.Stream(context.Background(), broker.Stream.Name)
			return err == nil
		})
		testutil.Eventually(t, 10*time.Second, "queued and delivered in the stream", func() bool {
			seen := map[string]bool{}
			for _, msg := range eventstest.ReadStream(t, js, broker) {
				seen[msg.Envelope.Type] = true
			}
			return seen[courier.EventEmailQueued] && seen[courier.EventEmailDelivered]
		})
	})
}

// TestServePushOnlyWithAVAPIDPair: with a VAPID pair the push routes
// answer and hand out its public key; without one they are 404 and mail
// is sent as ever (TestServeDeliversToTheLocalMailboxAndPublishes runs
// without a pair).
func TestServePushOnlyWithAVAPIDPair(t *testing.T) {
	vapid, err := push.GenerateVAPID("mailto:push@example.com")
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range []struct {
			name string
			env  map[string]string
			want int
		}{
			{"Off", map[string]string{}, http.StatusNotFound},
			{"On", map[string]string{"COURIER_VAPID_PUBLIC_KEY": vapid.PublicKey, "COURIER_VAPID_PRIVATE_KEY": vapid.PrivateKey,
				"COURIER_VAPID_SUBJECT": vapid.Subject}, http.StatusOK},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tt.env["DATABASE_URL"] = migrated(t, engine)
				base := serve(t, tt.env)
				res, err := http.Get(base + "/v1/push/vapid_public_key")
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				var body struct {
					PublicKey string `json:"public_key"`
				}
				_ = json.NewDecoder(res.Body).Decode(&body)
				if res.StatusCode != tt.want || (tt.want == http.StatusOK && body.PublicKey != vapid.PublicKey) {
					t.Errorf("GET /v1/push/vapid_public_key = %d %q, want %d", res.StatusCode, body.PublicKey, tt.want)
				}
			})
		}
	})
}
