package museusage_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/billing/museusage"
	"github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

const (
	account  = "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f"
	last     = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	deadline = 20 * time.Second
)

func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// consumed is muse.tokens.consumed in the shape muse's specification
// names: subject platform, data with account_id, alias, provider, the
// token counts and estimated.
func consumed(accountID, total string) events.Envelope {
	data := `{"account_id":"` + accountID + `","alias":"fast","provider":"openai","prompt_tokens":10,"completion_tokens":5,` +
		`"total_tokens":` + total + `,"estimated":false}`
	return events.Envelope{SpecVersion: events.SpecVersion, ID: uuid.NewString(), Type: museusage.Type, Source: "muse",
		Subject: "platform", Time: time.Now().UTC(), Data: []byte(data)}
}

func publish(t *testing.T, js jetstream.JetStream, b *eventstest.Broker, e events.Envelope) {
	t.Helper()
	body, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// A fresh message id each time, so the broker's duplicate window does
	// not drop the second copy before the consumer sees it.
	if _, err := js.Publish(context.Background(), b.Stream.Subject(e.Type), body, jetstream.WithMsgID(uuid.NewString())); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// TestMuseTokensBecomeUsage publishes muse.tokens.consumed to a real
// JetStream broker, one event twice, and checks billing's consumer: each
// event is one usage record (its id the envelope's), summed into its hour
// with one billing.usage.recorded each, whatever the redeliveries; a
// completion of no tokens records nothing; a payload with a fractional
// count is parked.
func TestMuseTokensBecomeUsage(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			ctx := context.Background()
			db := sqltest.Open(t, engine, sqlstore.Migrations)
			if _, err := consumer.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			kicked := make(chan struct{}, 16)
			stop, err := museusage.Start(ctx, db, museusage.Config{EventsURL: b.URL, Stream: b.Stream,
				Backoff: []time.Duration{50 * time.Millisecond}, Recorded: func() { kicked <- struct{}{} }}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			_, js := eventstest.Connect(t, b)
			eventstest.EnsureStream(t, js, b)

			first := consumed(account, "15")
			publish(t, js, b, first)
			publish(t, js, b, first) // redelivered: recorded once
			publish(t, js, b, consumed(account, "1000"))
			publish(t, js, b, consumed(account, "0"))
			publish(t, js, b, consumed(account, "2.5"))
			publish(t, js, b, consumed(last, "7")) // last: once it is in, the rest were handled

			testutil.Eventually(t, deadline, "the last event recorded", func() bool {
				return count(t, db, `SELECT count(*) FROM usage_records WHERE account_id = $1`, last) == 1
			})
			if got := count(t, db, `SELECT count(*) FROM usage_records WHERE account_id = $1`, account); got != 2 {
				t.Errorf("usage records = %d, want 2", got)
			}
			if got := count(t, db, `SELECT count(*) FROM usage_records WHERE id = $1 AND quantity = 15 AND metric = 'tokens' AND source = 'muse'`, first.ID); got != 1 {
				t.Errorf("the first event's record (by its envelope id) = %d rows, want 1", got)
			}
			if got := count(t, db, `SELECT coalesce(sum(quantity), 0) FROM usage_hourly WHERE account_id = $1`, account); got != 1015 {
				t.Errorf("hourly sum = %d, want 1015", got)
			}
			if got := count(t, db, `SELECT count(*) FROM outbox WHERE type = 'billing.usage.recorded'`); got != 3 {
				t.Errorf("usage.recorded rows = %d, want 3", got)
			}
			if got := count(t, db, `SELECT count(*) FROM parked_events WHERE consumer = $1`, museusage.ConsumerName); got != 1 {
				t.Errorf("parked events = %d, want 1 (the fractional count)", got)
			}
			if len(kicked) == 0 {
				t.Error("Recorded was never called")
			}
		})
	})
}

// TestUsageReadsTheEnvelope: the payload's fields as muse names them map to
// a record; what cannot be read is permanent.
func TestUsageReadsTheEnvelope(t *testing.T) {
	ok := consumed(account, "42")
	tests := []struct {
		name      string
		e         events.Envelope
		record    bool
		permanent string
	}{
		{"tokens", ok, true, ""},
		{"no tokens", consumed(account, "0"), false, ""},
		{"negative", consumed(account, "-3"), false, "quantity"},
		{"fraction", consumed(account, "3.5"), false, "quantity"},
		{"account not a uuid", consumed("acct_1", "3"), false, "account_id"},
		{"not json", events.Envelope{ID: uuid.NewString(), Type: museusage.Type, Time: time.Now(), Data: []byte(`[1]`)}, false, "data"},
		{"another type", events.Envelope{ID: uuid.NewString(), Type: "muse.other.thing", Time: time.Now(), Data: ok.Data}, false, "not a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, record, err := museusage.Usage(tt.e)
			if tt.permanent != "" {
				if err == nil || !strings.Contains(err.Error(), tt.permanent) {
					t.Fatalf("err = %v, want one naming %q", err, tt.permanent)
				}
				return
			}
			if err != nil || record != tt.record {
				t.Fatalf("Usage = %v, %v; want record %v", record, err, tt.record)
			}
			if record && (u.ID != tt.e.ID || u.AccountID != account || u.Quantity != 42 || u.Metric != "tokens" || !u.WindowStart.Equal(u.WindowEnd)) {
				t.Errorf("record = %+v", u)
			}
		})
	}
}
