package observe_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestConsumerMetricsReportLagAndParkedEvents(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, nil)
		if _, err := consumer.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		b := eventstest.Embedded(t)
		_, js := eventstest.Connect(t, b)
		eventstest.EnsureStream(t, js, b)
		if _, err := js.CreateOrUpdateConsumer(ctx, b.Stream.Name, jetstream.ConsumerConfig{Durable: "box-accounts", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := js.Publish(ctx, b.Stream.Subject("identity.user.create"), []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		now := sqldb.Timestamp(time.Now())
		if _, err := db.Exec(ctx, `INSERT INTO parked_events (consumer, stream, stream_seq, nats_subject, body, error, deliveries, parked_at)
			VALUES ('box-accounts', $1, 7, 'events.x', $2, 'bad', 1, $3)`, b.Stream.Name, []byte("{}"), now); err != nil {
			t.Fatal(err)
		}

		m := observe.New("box")
		stop, err := m.Consumers(db, b.URL, b.Stream, []string{"box-accounts"}, discard())
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		addr, stopServe, err := m.Serve(ctx, "127.0.0.1:0", discard())
		if err != nil {
			t.Fatal(err)
		}
		defer stopServe()
		fams := scrape(t, addr)
		for name, want := range map[string]float64{
			"platform_events_consumer_pending_messages": 3,
			"platform_events_consumer_parked_messages":  1,
			"platform_events_consumer_scrape_ok":        1,
		} {
			if fams[name] == nil {
				t.Errorf("scrape has no %s", name)
				continue
			}
			if got := counter(fams[name], map[string]string{"consumer": "box-accounts"}); got != want {
				t.Errorf("%s: got %v, want %v", name, got, want)
			}
		}
	})
}
