package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// benchRig is an endpoint for each of benchAccounts accounts on a fresh
// database, all at one receiver that answers 204 and counts.
type benchRig struct {
	db       *sqldb.DB
	store    *sqlstore.Store
	hooks    *courier.Webhooks
	accounts []string
	next     atomic.Uint64 // the events made, as their stream sequence
	url      string        // the receiver's
	received atomic.Int64
}

// benchAccounts is how many subjects the benchmarks' events are about, in
// turn: deliveries of one subject to one endpoint go one at a time, in
// the stream's order, so a single subject would measure one receiver's
// round trip and not the loop; 64 keep DefaultWorkers busy.
const benchAccounts = 64

func newBenchRig(b *testing.B, engine sqldb.Engine) *benchRig {
	db := sqltest.Open(b, engine, sqlstore.Migrations)
	if _, err := consumer.Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	r := &benchRig{db: db, store: sqlstore.New(db)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	sealer, _ := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	r.hooks = courier.NewWebhooks(r.store, sealer, true)
	for range benchAccounts {
		id, account := uuid.NewString(), uuid.NewString()
		if _, err := r.store.CreateEndpoint(context.Background(), courier.Endpoint{ID: id, AccountID: account, URL: r.url,
			EventTypes: []string{"identity.member.joined"}}, sealer.Seal(id, []byte(courier.NewSecret()))); err != nil {
			b.Fatal(err)
		}
		r.accounts = append(r.accounts, account)
	}
	return r
}

// event is the next event, about the next account in turn, with its
// stream sequence for a batch enqueued without the stream.
func (r *benchRig) event() consumer.Event {
	seq := r.next.Add(1)
	account := r.accounts[seq%benchAccounts]
	return consumer.Event{Ctx: context.Background(), Seq: seq, Envelope: events.Envelope{SpecVersion: "1.0", ID: uuid.NewString(),
		Type: "identity.member.joined", Source: "identity", Subject: account, Time: time.Now().UTC(),
		Data: json.RawMessage(`{"account_id":"` + account + `","user_id":"` + uuid.NewString() + `","role":"member"}`)}}
}

func (r *benchRig) envelope() events.Envelope { return r.event().Envelope }

func (r *benchRig) waitReceived(b *testing.B, want int64) {
	deadline := time.Now().Add(5 * time.Minute)
	for r.received.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("received %d of %d", r.received.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkDeliverer: pending deliveries to the rig's endpoints, claimed, POSTed
// and recorded by one delivery loop (deliveries/s).
func BenchmarkDeliverer(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			r := newBenchRig(b, engine)
			for start := 0; start < b.N; start += 500 {
				if err := r.db.InTx(context.Background(), func(tx *sqldb.Tx) error {
					batch := make([]consumer.Event, min(500, b.N-start))
					for i := range batch {
						batch[i] = r.event()
					}
					return sqlstore.Enqueue(context.Background(), tx, batch)
				}); err != nil {
					b.Fatal(err)
				}
			}
			d := webhooks.NewDeliverer(r.store, r.hooks, webhooks.NewClient(true), webhooks.Options{}, discard())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			go func() { d.Run(ctx); close(done) }()
			r.waitReceived(b, int64(b.N))
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
			cancel()
			<-done
		})
	}
}

// BenchmarkBarePOST is BenchmarkDeliverer's baseline: the same body
// POSTed by as many goroutines as the loop has workers, with the same
// client, to the same kind of receiver, and nothing else. The ratio of the
// two bounds what any consumer stage in front of the loop can reach.
func BenchmarkBarePOST(b *testing.B) {
	r := newBenchRig(b, sqldb.SQLite)
	body, err := json.Marshal(r.envelope())
	if err != nil {
		b.Fatal(err)
	}
	client := webhooks.NewClient(true)
	url := r.url
	var sent atomic.Int64
	b.SetParallelism((webhooks.DefaultWorkers + 1) / 2) // GOMAXPROCS× this many goroutines
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			sent.Add(1)
		}
	})
	b.ReportMetric(float64(sent.Load())/time.Since(start).Seconds(), "deliveries/s")
}

// BenchmarkPipeline: events published to the stream, through the
// consumer (one copy, as Consume runs, kicking the loop after each
// commit) and the delivery loop, to the receiver (deliveries/s).
func BenchmarkPipeline(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			r := newBenchRig(b, engine)
			broker := eventstest.Embedded(b)
			_, js := eventstest.Connect(b, broker)
			d := webhooks.NewDeliverer(r.store, r.hooks, webhooks.NewClient(true), webhooks.Options{}, discard())
			c, err := webhooks.NewConsumer(context.Background(), r.db, js, d.Kick, discard())
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{}, 2)
			b.ResetTimer()
			start := time.Now()
			go func() { _ = c.Run(ctx); done <- struct{}{} }()
			go func() { d.Run(ctx); done <- struct{}{} }()
			for range b.N {
				e := r.envelope()
				body, _ := json.Marshal(e)
				msg := nats.NewMsg(broker.Stream.Subject(e.Type))
				msg.Data = body
				msg.Header.Set("Nats-Msg-Id", e.ID)
				if _, err := js.PublishMsgAsync(msg); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			r.waitReceived(b, int64(b.N))
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
			cancel()
			<-done
			<-done
		})
	}
}
