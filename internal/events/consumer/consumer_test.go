package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// logSink collects log records so a test can see the alerts.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

func (s *logSink) alerts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "alert" && a.Value.Bool() {
				n++
			}
			return true
		})
	}
	return n
}

// openDB gives the consumer a database with its tables and a table of the
// handler's own work, whose primary key would refuse a second application.
func openDB(t *testing.T, engine sqldb.Engine) *sqldb.DB {
	t.Helper()
	db := sqltest.Open(t, engine, nil)
	ctx := context.Background()
	if _, err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if n, err := Migrate(ctx, db); err != nil || n != 0 {
		t.Fatalf("second Migrate: applied %d, %v", n, err)
	}
	if pending, err := Pending(ctx, db); err != nil || pending {
		t.Fatalf("Pending after Migrate: %v %v", pending, err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE applied (event_id TEXT NOT NULL, applications INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// ready opens the consumer's database on engine and connects to b, with
// the event stream in place.
func ready(t *testing.T, engine sqldb.Engine, b *eventstest.Broker) (*sqldb.DB, jetstream.JetStream) {
	t.Helper()
	db := openDB(t, engine)
	_, js := eventstest.Connect(t, b)
	eventstest.EnsureStream(t, js, b)
	return db, js
}

func envelope(typ string) events.Envelope {
	return events.Envelope{
		SpecVersion: events.SpecVersion, ID: uuid.NewString(), Type: typ, Source: "identity",
		Subject: uuid.NewString(), Time: time.Now().UTC(), Data: []byte(`{}`),
	}
}

func publish(t *testing.T, js jetstream.JetStream, b *eventstest.Broker, e events.Envelope, msgID string) {
	t.Helper()
	body, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	publishRaw(t, js, b.Stream.Subject(e.Type), body, msgID)
}

func publishRaw(t *testing.T, js jetstream.JetStream, subject string, body []byte, msgID string) {
	t.Helper()
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := js.Publish(context.Background(), subject, body, opts...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// recordingHandler writes one row of its own per application.
func recordingHandler(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
	_, err := tx.Exec(ctx, `INSERT INTO applied (event_id, applications) VALUES ($1, 1)`, e.ID)
	return err
}

// applications is how many times the handler's work for event id was
// committed.
func applications(t *testing.T, db *sqldb.DB, id string) int {
	t.Helper()
	return count(t, db, `SELECT count(*) FROM applied WHERE event_id = $1`, id)
}

// settledOnce waits until the consumer has nothing pending or unacknowledged,
// then checks that each of all was applied exactly once.
func settledOnce(t *testing.T, db *sqldb.DB, js jetstream.JetStream, b *eventstest.Broker, all []events.Envelope) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "nothing pending", func() bool {
		ci := consumerInfo(t, js, b)
		return ci.NumAckPending == 0 && ci.NumPending == 0
	})
	for _, e := range all {
		if got := applications(t, db, e.ID); got != 1 {
			t.Errorf("event %s applied %d times, want once", e.ID, got)
		}
	}
}

func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// consumerInfo is the server's view of the test consumer.
func consumerInfo(t *testing.T, js jetstream.JetStream, b *eventstest.Broker) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(context.Background(), b.Stream.Name, "test-consumer")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func run(t *testing.T, c *Consumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// eventHandler is what most tests apply: one event at a time, through Each.
type eventHandler = func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error

func newConsumer(t *testing.T, db *sqldb.DB, js jetstream.JetStream, b *eventstest.Broker, cfg Config, h eventHandler, log slog.Handler) *Consumer {
	t.Helper()
	return newBatchConsumer(t, db, js, b, cfg, Each(h), log)
}

func newBatchConsumer(t *testing.T, db *sqldb.DB, js jetstream.JetStream, b *eventstest.Broker, cfg Config, h Handler, log slog.Handler) *Consumer {
	t.Helper()
	cfg.Stream = b.Stream
	if cfg.Name == "" {
		cfg.Name = "test-consumer"
	}
	if log == nil {
		log = slog.DiscardHandler
	}
	c, err := New(context.Background(), db, js, cfg, h, slog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The same envelope reaching the consumer several times (three copies in
// the stream, as a publisher's retry outside the duplicate window leaves,
// and a redelivery after a lost ack) is applied once.
func TestDuplicatesAppliedOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db, js := ready(t, engine, b)

			dup := envelope("identity.account.updated")
			lostAck := envelope("identity.account.updated")
			last := envelope("identity.account.deleted")
			for i := 0; i < 3; i++ {
				publish(t, js, b, dup, uuid.NewString()) // distinct message ids defeat the broker's dedupe
			}
			publish(t, js, b, lostAck, lostAck.ID)
			publish(t, js, b, last, last.ID)

			var mu sync.Mutex
			calls := map[string]int{}
			h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
				mu.Lock()
				calls[e.ID]++
				mu.Unlock()
				return recordingHandler(ctx, tx, e)
			}
			skipped := false
			cfg := Config{Backoff: []time.Duration{300 * time.Millisecond}}
			cfg.skipAck = func(e events.Envelope) bool {
				if e.ID == lostAck.ID && !skipped {
					skipped = true
					return true
				}
				return false
			}
			run(t, newConsumer(t, db, js, b, cfg, h, nil))

			testutil.Eventually(t, 20*time.Second, "every event applied", func() bool {
				return applications(t, db, last.ID) == 1 && applications(t, db, lostAck.ID) == 1
			})
			// The lost ack's redelivery comes after the back-off; wait until the
			// server has no delivery of it outstanding.
			testutil.Eventually(t, 20*time.Second, "nothing pending", func() bool {
				ci := consumerInfo(t, js, b)
				return ci.NumAckPending == 0 && ci.NumPending == 0 && ci.NumRedelivered == 0
			})
			for _, e := range []events.Envelope{dup, lostAck, last} {
				if n := applications(t, db, e.ID); n != 1 {
					t.Errorf("event %s applied %d times, want once", e.ID, n)
				}
				if n := count(t, db, `SELECT count(*) FROM consumed_events WHERE event_id = $1`, e.ID); n != 1 {
					t.Errorf("event %s recorded %d times", e.ID, n)
				}
			}
			mu.Lock()
			if calls[dup.ID] != 1 || calls[lostAck.ID] != 1 {
				t.Errorf("handler ran %d times for the duplicate and %d for the lost ack, want once each", calls[dup.ID], calls[lostAck.ID])
			}
			mu.Unlock()
			if !skipped {
				t.Error("the lost-ack case never ran")
			}
		})
	})
}

// An event the handler always fails is parked after MaxAttempts, with its
// error and an alert, and the event after it is still processed.
func TestPoisonEventParkedNextProcessed(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db, js := ready(t, engine, b)

			poison := envelope("identity.member.joined")
			next := envelope("identity.member.joined")
			publish(t, js, b, poison, poison.ID)
			publish(t, js, b, next, next.ID)
			publishRaw(t, js, b.Stream.Subject("identity.member.joined"), []byte(`{"specversion":"1.0","id":"x"}`), "")
			final := envelope("identity.member.removed")
			publish(t, js, b, final, final.ID)

			h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
				if err := recordingHandler(ctx, tx, e); err != nil {
					return err
				}
				if e.ID == poison.ID {
					return errors.New("cannot apply this one")
				}
				return nil
			}
			sink := &logSink{}
			cfg := Config{MaxAttempts: 3, Backoff: []time.Duration{50 * time.Millisecond}}
			run(t, newConsumer(t, db, js, b, cfg, h, sink))

			// The alert follows the park's commit, so it is waited for too.
			testutil.Eventually(t, 20*time.Second, "poison and malformed parked and alerted, others applied", func() bool {
				return count(t, db, `SELECT count(*) FROM parked_events`) == 2 &&
					applications(t, db, next.ID) == 1 && applications(t, db, final.ID) == 1 &&
					sink.alerts() >= 2
			})
			var errText string
			var deliveries int
			if err := db.QueryRow(context.Background(), `SELECT error, deliveries FROM parked_events WHERE event_id = $1`, poison.ID).Scan(&errText, &deliveries); err != nil {
				t.Fatal(err)
			}
			if errText != "cannot apply this one" || deliveries != 3 {
				t.Errorf("parked poison: error %q after %d deliveries, want the handler's error after 3", errText, deliveries)
			}
			if n := count(t, db, `SELECT count(*) FROM parked_events WHERE event_id IS NULL AND error LIKE 'not a valid envelope%'`); n != 1 {
				t.Errorf("malformed message parked %d times, want once", n)
			}
			if applications(t, db, poison.ID) != 0 || count(t, db, `SELECT count(*) FROM consumed_events WHERE event_id = $1`, poison.ID) != 0 {
				t.Error("the poison event's failed work was committed")
			}
			if sink.alerts() != 2 {
				t.Errorf("%d alerts logged, want 2", sink.alerts())
			}
		})
	})
}

// An event applied at its first delivery but never acknowledged comes
// back past MaxAttempts (a lost ack, or copies fetched ahead and
// redelivered while they waited): it is acknowledged, not parked, and no
// alert is raised for work that was done.
func TestAppliedEventPastAttemptsAcknowledged(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db, js := ready(t, engine, b)
			e := envelope("identity.account.updated")
			publish(t, js, b, e, e.ID)

			var calls atomic.Int32
			h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
				calls.Add(1)
				return recordingHandler(ctx, tx, e)
			}
			sink := &logSink{}
			cfg := Config{MaxAttempts: 2, Backoff: []time.Duration{30 * time.Millisecond}}
			cfg.skipAck = func(events.Envelope) bool { return true } // every ack after the work is lost
			run(t, newConsumer(t, db, js, b, cfg, h, sink))

			testutil.Eventually(t, 20*time.Second, "the event acknowledged", func() bool {
				ci := consumerInfo(t, js, b)
				// The third delivery is past MaxAttempts.
				return ci.Delivered.Consumer >= 3 && ci.NumAckPending == 0 && ci.NumPending == 0
			})
			if n := applications(t, db, e.ID); n != 1 || calls.Load() != 1 {
				t.Errorf("applied %d times by %d handler runs, want once", n, calls.Load())
			}
			if n := count(t, db, `SELECT count(*) FROM parked_events`); n != 0 {
				t.Errorf("%d events parked, want none", n)
			}
			if sink.alerts() != 0 {
				t.Errorf("%d alerts logged, want none", sink.alerts())
			}
		})
	})
}

// A handler that fails and then succeeds applies its work once: the failed
// attempts roll back with the event id.
func TestTransientFailureRetried(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, js := ready(t, engine, b)
		e := envelope("identity.account.created")
		publish(t, js, b, e, e.ID)

		var mu sync.Mutex
		attempts := 0
		h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
			if err := recordingHandler(ctx, tx, e); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			attempts++
			if attempts < 3 {
				return fmt.Errorf("transient failure %d", attempts)
			}
			return nil
		}
		run(t, newConsumer(t, db, js, b, Config{MaxAttempts: 5, Backoff: []time.Duration{50 * time.Millisecond}}, h, nil))
		testutil.Eventually(t, 20*time.Second, "applied", func() bool { return applications(t, db, e.ID) == 1 })
		if n := count(t, db, `SELECT count(*) FROM parked_events`); n != 0 {
			t.Errorf("%d parked", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if attempts != 3 {
			t.Errorf("handler ran %d times, want 3", attempts)
		}
	})
}

func TestPermanentErrorParksAtOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, js := ready(t, engine, b)
		e := envelope("identity.account.deleted")
		publish(t, js, b, e, e.ID)
		h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
			return Permanent(errors.New("account unknown to this service"))
		}
		run(t, newConsumer(t, db, js, b, Config{}, h, nil))
		testutil.Eventually(t, 20*time.Second, "parked", func() bool {
			return count(t, db, `SELECT count(*) FROM parked_events WHERE event_id = $1 AND deliveries = 1`, e.ID) == 1
		})
	})
}

// Two consumers with different names each apply every event once, and a
// type filter keeps other types away.
func TestConsumersAreIndependent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, js := ready(t, engine, b)
		member := envelope("identity.member.joined")
		user := envelope("identity.user.created")
		publish(t, js, b, member, member.ID)
		publish(t, js, b, user, user.ID)

		var mu sync.Mutex
		seen := map[string][]string{}
		handler := func(name string) eventHandler {
			return func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
				mu.Lock()
				defer mu.Unlock()
				seen[name] = append(seen[name], e.Type)
				return nil
			}
		}
		run(t, newConsumer(t, db, js, b, Config{Name: "all"}, handler("all"), nil))
		run(t, newConsumer(t, db, js, b, Config{Name: "members", Types: []string{"identity.member.*"}}, handler("members"), nil))
		testutil.Eventually(t, 20*time.Second, "both consumed", func() bool {
			return count(t, db, `SELECT count(*) FROM consumed_events WHERE consumer = 'all'`) == 2 &&
				count(t, db, `SELECT count(*) FROM consumed_events WHERE consumer = 'members'`) == 1
		})
		mu.Lock()
		defer mu.Unlock()
		if len(seen["members"]) != 1 || seen["members"][0] != "identity.member.joined" {
			t.Errorf("filtered consumer saw %v", seen["members"])
		}
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	b := eventstest.Embedded(t)
	db := openDB(t, sqldb.SQLite)
	_, js := eventstest.Connect(t, b)
	ok := func(context.Context, *sqldb.Tx, []Event) error { return nil }
	for _, name := range []string{"", "has.dot", "has space", "wild*"} {
		if _, err := New(context.Background(), db, js, Config{Name: name}, ok, slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := New(context.Background(), db, js, Config{Name: "x"}, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("nil handler accepted")
	}
}

// Events waiting in the stream are applied several to a transaction, each
// once, and an event that fails inside a batch rolls back only itself:
// the others of its batch are applied and acknowledged without waiting
// for its retries.
func TestBatchAppliedTogetherFailureAlone(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, js := ready(t, engine, b)
		const n = 40
		var all []events.Envelope
		for range n {
			all = append(all, envelope("identity.member.joined"))
		}
		// The first half waits in the stream before the consumer starts;
		// the second, with the failing event, follows once it is in.
		for _, e := range all[:n/2] {
			publish(t, js, b, e, e.ID)
		}
		failing := all[3*n/4]

		var mu sync.Mutex
		perTx := map[*sqldb.Tx]int{}
		rolledBack := map[*sqldb.Tx]bool{}
		failures := 0
		h := func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
			if err := recordingHandler(ctx, tx, e); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if e.ID == failing.ID && failures < 2 {
				failures++
				rolledBack[tx] = true
				return errors.New("not yet")
			}
			perTx[tx]++
			return nil
		}
		cfg := Config{MaxAttempts: 5, Backoff: []time.Duration{time.Second}}
		run(t, newConsumer(t, db, js, b, cfg, h, nil))
		testutil.Eventually(t, 20*time.Second, "the first half applied", func() bool {
			return count(t, db, `SELECT count(*) FROM applied`) == n/2
		})
		for _, e := range all[n/2:] {
			publish(t, js, b, e, e.ID)
		}

		// Every other event is in and acknowledged before the failing
		// one's first redelivery (a second away) has come.
		testutil.Eventually(t, 900*time.Millisecond, "the others applied", func() bool {
			return count(t, db, `SELECT count(*) FROM applied`) == n-1
		})
		testutil.Eventually(t, 20*time.Second, "the failing one applied on a retry", func() bool {
			return applications(t, db, failing.ID) == 1
		})
		settledOnce(t, db, js, b, all)
		if got := count(t, db, `SELECT count(*) FROM consumed_events`); got != n {
			t.Errorf("%d ids recorded, want %d", got, n)
		}
		mu.Lock()
		defer mu.Unlock()
		most := 0
		for tx, k := range perTx {
			if !rolledBack[tx] {
				most = max(most, k)
			}
		}
		if most < 2 {
			t.Errorf("at most %d events committed in one transaction, want batches", most)
		}
	})
}

// A set-wise handler is called once per transaction with that batch's
// fresh events, in the stream's order, each once: a copy of an envelope
// in the same batch and one applied before are left out.
func TestBatchHandlerGetsFreshEventsInOrder(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, js := ready(t, engine, b)
		const n = 30
		var all []events.Envelope
		order := map[string]int{}
		for i := range n {
			e := envelope("identity.member.joined")
			all = append(all, e)
			order[e.ID] = i
			publish(t, js, b, e, e.ID)
		}
		// The same envelope again under another message id, so the
		// stream keeps both copies, and once more after the first round.
		publish(t, js, b, all[5], "copy-1")

		var mu sync.Mutex
		var calls [][]string
		seqs := map[string]uint64{}
		h := func(ctx context.Context, tx *sqldb.Tx, batch []Event) error {
			var got []string
			for _, e := range batch {
				if err := recordingHandler(e.Ctx, tx, e.Envelope); err != nil {
					return err
				}
				got = append(got, e.ID)
			}
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, got)
			for _, e := range batch {
				seqs[e.ID] = e.Seq
			}
			return nil
		}
		var commits atomic.Int64
		run(t, newBatchConsumer(t, db, js, b, Config{Committed: func() { commits.Add(1) }}, h, nil))
		testutil.Eventually(t, 20*time.Second, "every event applied", func() bool {
			return count(t, db, `SELECT count(*) FROM applied`) == n
		})
		publish(t, js, b, all[7], "copy-2")
		settledOnce(t, db, js, b, all)
		mu.Lock()
		defer mu.Unlock()
		most := 0
		for _, ids := range calls {
			if len(ids) == 0 {
				t.Error("the handler was called with an empty batch")
			}
			most = max(most, len(ids))
			for i := 1; i < len(ids); i++ {
				if order[ids[i]] <= order[ids[i-1]] {
					t.Errorf("batch %v: not in the stream's order", ids)
				}
			}
		}
		if most < 2 {
			t.Errorf("at most %d events in one call, want batches", most)
		}
		// Each event carries its sequence in the stream (the fresh
		// stream's first n messages are all's, in order).
		for _, e := range all {
			if want := uint64(order[e.ID] + 1); seqs[e.ID] != want {
				t.Errorf("event %d: Seq = %d, want its stream sequence %d", order[e.ID], seqs[e.ID], want)
			}
		}
		// Committed tells of each transaction that applied events, and of
		// no other (the late copy applied nothing).
		if got := commits.Load(); got != int64(len(calls)) {
			t.Errorf("Committed called %d times for %d transactions that applied events", got, len(calls))
		}
	})
}
