package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// insertRows writes n outbox rows the way identity's store does: a new
// envelope id, published_at null, attempts 0, next_attempt_at = created_at.
func insertRows(t testing.TB, db *sqldb.DB, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for start := 0; start < n; start += 200 {
		err := db.InTx(context.Background(), func(tx *sqldb.Tx) error {
			for i := start; i < min(start+200, n); i++ {
				id, user := uuid.NewString(), uuid.NewString()
				data := fmt.Sprintf(`{"user_id":%q,"email":"user%d@example.com"}`, user, i)
				_, err := tx.Exec(context.Background(), `INSERT INTO outbox
					(id, type, source, subject, time, data, created_at, next_attempt_at)
					VALUES ($1, 'identity.user.created', 'identity', $2, $3, $4, $3, $3)`,
					id, user, tx.Now, data)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("insert outbox rows: %v", err)
		}
	}
	return ids
}

// ready opens a fresh identity database on engine and connects to b, with
// the event stream in place.
func ready(t *testing.T, engine sqldb.Engine, b *eventstest.Broker) (*sqldb.DB, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	nc, js := eventstest.Connect(t, b)
	eventstest.EnsureStream(t, js, b)
	return db, nc, js
}

// allRows reports whether every outbox row satisfies cond.
func allRows(t testing.TB, db *sqldb.DB, cond func(Row) bool) bool {
	t.Helper()
	for _, r := range rows(t, db) {
		if !cond(r) {
			return false
		}
	}
	return true
}

func countUnpublished(t testing.TB, db *sqldb.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func rows(t testing.TB, db *sqldb.DB) []Row {
	t.Helper()
	rs, err := List(context.Background(), db, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// assertExactlyOnce checks that the stream holds each id once and nothing
// else, and that each message is the row's envelope on events.<type>.
func assertExactlyOnce(t *testing.T, msgs []eventstest.Message, ids []string, b *eventstest.Broker) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.Envelope.ID]++
		if m.MsgID != m.Envelope.ID {
			t.Errorf("Nats-Msg-Id %q, envelope id %q", m.MsgID, m.Envelope.ID)
		}
		if want := b.Stream.Subject(m.Envelope.Type); m.Subject != want {
			t.Errorf("subject %q, want %q", m.Subject, want)
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("event %s is in the stream %d times, want once", id, seen[id])
		}
	}
	if len(msgs) != len(ids) {
		t.Errorf("stream holds %d messages, want %d", len(msgs), len(ids))
	}
}

func runPublishers(t *testing.T, n int, pubs ...*Publisher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Run(ctx)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func TestTwoPublishersDeliverEveryRowOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			db := sqltest.Open(t, engine, sqlstore.Migrations)
			ids := insertRows(t, db, 1000)
			_, js1 := eventstest.Connect(t, b)
			_, js2 := eventstest.Connect(t, b)
			opts := Options{Service: "identity", Stream: b.Stream, BatchSize: 50, PollInterval: 10 * time.Millisecond}
			stop := runPublishers(t, 2,
				NewPublisher(db, js1, opts, discard()),
				NewPublisher(db, js2, opts, discard()))
			testutil.Eventually(t, 60*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
			stop()

			for _, r := range rows(t, db) {
				if r.PublishedAt == nil || r.ParkedAt != nil || r.LastError != "" || r.Attempts != 1 {
					t.Fatalf("row %d: published_at %v parked_at %v attempts %d error %q", r.Seq, r.PublishedAt, r.ParkedAt, r.Attempts, r.LastError)
				}
			}
			assertExactlyOnce(t, eventstest.ReadStream(t, js1, b), ids, b)
		})
	})
}

func TestBrokerDownRowsWaitThenDeliver(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, nc, js := ready(t, engine, b)
		ids := insertRows(t, db, 40)
		p := NewPublisher(db, js, Options{Stream: b.Stream, BatchSize: 50, RetryBase: time.Millisecond, RetryMax: time.Millisecond}, discard())

		b.Server.Shutdown()
		for attempt := 1; attempt <= 2; attempt++ {
			// Each batch claims every due row and fails them all.
			testutil.Eventually(t, 10*time.Second, fmt.Sprintf("attempt %d on every row", attempt), func() bool {
				n, err := p.PublishBatch(ctx)
				if err != nil || n != 0 {
					t.Fatalf("PublishBatch with the broker down: published %d, err %v", n, err)
				}
				return allRows(t, db, func(r Row) bool { return r.Attempts >= attempt })
			})
		}
		for _, r := range rows(t, db) {
			if r.PublishedAt != nil || r.ParkedAt != nil || r.LastError == "" || r.Attempts != 2 {
				t.Fatalf("row %d after two failed attempts: published_at %v parked_at %v attempts %d error %q",
					r.Seq, r.PublishedAt, r.ParkedAt, r.Attempts, r.LastError)
			}
		}

		b.Restart(t)
		testutil.Eventually(t, 10*time.Second, "reconnect", nc.IsConnected)
		stop := runPublishers(t, 1, p)
		testutil.Eventually(t, 30*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
		stop()
		for _, r := range rows(t, db) {
			if r.Attempts != 3 || r.LastError != "" {
				t.Errorf("row %d: attempts %d error %q, want 3 and none", r.Seq, r.Attempts, r.LastError)
			}
		}
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
	})
}

// movableClock makes db's clock settable from the test while publishers
// read it: advance moves it forward by d, as if d had passed.
func movableClock(db *sqldb.DB) (advance func(d time.Duration)) {
	var offset atomic.Int64
	db.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	return func(d time.Duration) { offset.Add(int64(d)) }
}

// A publisher killed after publishing and before marking leaves its rows
// unpublished and leased; when the lease ends the next claim republishes
// them, and the stream's duplicate window keeps one copy of each.
func TestPublisherKilledMidBatchLosesNothing(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			ctx := context.Background()
			db, _, js := ready(t, engine, b)
			advance := movableClock(db)
			ids := insertRows(t, db, 30)

			killed := errors.New("publisher killed")
			opts := Options{Stream: b.Stream}
			opts.beforeMark = func(context.Context) error { return killed }
			if _, err := NewPublisher(db, js, opts, discard()).PublishBatch(ctx); !errors.Is(err, killed) {
				t.Fatalf("killed publisher: got %v", err)
			}
			if got := len(eventstest.ReadStream(t, js, b)); got != 30 {
				t.Fatalf("the killed publisher sent %d messages, want 30", got)
			}
			for _, r := range rows(t, db) {
				if r.PublishedAt != nil || r.Attempts != 0 || r.LastError != "" {
					t.Fatalf("row %d after the kill: published_at %v attempts %d error %q, want untouched", r.Seq, r.PublishedAt, r.Attempts, r.LastError)
				}
			}

			next := NewPublisher(db, js, Options{Stream: b.Stream}, discard())
			if n, err := next.PublishBatch(ctx); err != nil || n != 0 {
				t.Fatalf("next publisher within the lease: published %d, err %v; want none", n, err)
			}
			advance(next.opts.Lease)
			if n, err := next.PublishBatch(ctx); err != nil || n != 30 {
				t.Fatalf("next publisher after the lease: published %d, err %v", n, err)
			}
			for _, r := range rows(t, db) {
				if r.PublishedAt == nil || r.Attempts != 1 || r.LastError != "" {
					t.Fatalf("row %d: published_at %v attempts %d error %q", r.Seq, r.PublishedAt, r.Attempts, r.LastError)
				}
			}
			assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
		})
	})
}

// A publisher holding a batch (here: stalled between the acknowledgements
// and the mark) holds no transaction: another publisher publishes the rows
// after it meanwhile, on either engine, and takes its rows over when the
// lease ends. The stalled one's late mark then changes nothing.
func TestLeasedRowsAreSkippedAndReclaimed(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		advance := movableClock(db)
		ids := insertRows(t, db, 20)

		held, release := make(chan struct{}), make(chan struct{})
		stalled := Options{Stream: b.Stream, BatchSize: 10}
		stalled.beforeMark = func(context.Context) error {
			close(held)
			<-release
			return nil
		}
		done := make(chan error, 1)
		go func() {
			_, err := NewPublisher(db, js, stalled, discard()).PublishBatch(ctx)
			done <- err
		}()
		<-held

		other := NewPublisher(db, js, Options{Stream: b.Stream, BatchSize: 100}, discard())
		if n, err := other.PublishBatch(ctx); err != nil || n != 10 {
			t.Fatalf("while the first 10 are leased: published %d, err %v; want the other 10", n, err)
		}
		if n, err := other.PublishBatch(ctx); err != nil || n != 0 {
			t.Fatalf("within the lease: published %d, err %v; want none", n, err)
		}
		advance(other.opts.Lease)
		if n, err := other.PublishBatch(ctx); err != nil || n != 10 {
			t.Fatalf("after the lease: published %d, err %v; want the stalled one's 10", n, err)
		}
		marked := rows(t, db)

		close(release)
		if err := <-done; err != nil {
			t.Fatalf("stalled publisher's late mark: %v", err)
		}
		for i, r := range rows(t, db) {
			if r.PublishedAt == nil || !r.PublishedAt.Equal(*marked[i].PublishedAt) || r.Attempts != 1 {
				t.Errorf("row %d after the late mark: published_at %v (was %v) attempts %d", r.Seq, r.PublishedAt, marked[i].PublishedAt, r.Attempts)
			}
		}
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
	})
}

// A batch that failed but is marked only after its lease ended records
// nothing on rows another publisher has claimed since: the failure belongs
// to an attempt that is no longer the row's latest.
func TestLateFailureLeavesReclaimedRowsAlone(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		advance := movableClock(db)
		ids := insertRows(t, db, 10)

		// stall returns options whose publisher stops before marking until
		// release is closed.
		stall := func(opts Options) (Options, chan struct{}, chan struct{}) {
			held, release := make(chan struct{}), make(chan struct{})
			opts.beforeMark = func(context.Context) error {
				close(held)
				<-release
				return nil
			}
			return opts, held, release
		}
		publish := func(js jetstream.JetStream, opts Options) chan error {
			done := make(chan error, 1)
			go func() {
				_, err := NewPublisher(db, js, opts, discard()).PublishBatch(ctx)
				done <- err
			}()
			return done
		}

		// The first publisher's broker is gone: all its rows fail, and with
		// MaxAttempts 1 it would park them.
		gone := eventstest.Embedded(t)
		_, goneJS := eventstest.Connect(t, gone)
		gone.Server.Shutdown()
		failing, failingHeld, failingRelease := stall(Options{Stream: b.Stream, MaxAttempts: 1})
		failed := publish(goneJS, failing)
		<-failingHeld

		// Its lease ends; a second publisher claims and publishes the rows,
		// and is held before marking them.
		advance(NewPublisher(db, js, Options{Stream: b.Stream}, discard()).opts.Lease)
		second, secondHeld, secondRelease := stall(Options{Stream: b.Stream})
		published := publish(js, second)
		<-secondHeld

		close(failingRelease)
		if err := <-failed; err != nil {
			t.Fatalf("first publisher's late mark: %v", err)
		}
		for _, r := range rows(t, db) {
			if r.ParkedAt != nil || r.Attempts != 0 || r.LastError != "" {
				t.Fatalf("row %d under the second lease after the first's late mark: parked_at %v attempts %d error %q",
					r.Seq, r.ParkedAt, r.Attempts, r.LastError)
			}
		}

		close(secondRelease)
		if err := <-published; err != nil {
			t.Fatalf("second publisher: %v", err)
		}
		for _, r := range rows(t, db) {
			if r.PublishedAt == nil || r.ParkedAt != nil || r.Attempts != 1 || r.LastError != "" {
				t.Errorf("row %d: published_at %v parked_at %v attempts %d error %q", r.Seq, r.PublishedAt, r.ParkedAt, r.Attempts, r.LastError)
			}
		}
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
	})
}

// Stopping Run while batches are in flight: it returns once every batch it
// claimed is marked, none left to wait out a lease.
func TestRunMarksBatchesInHandBeforeReturning(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		insertRows(t, db, 200)

		var mu sync.Mutex
		var claimed []int64
		ctx, cancel := context.WithCancel(context.Background())
		opts := Options{Stream: b.Stream, BatchSize: 10, InFlight: 4, PollInterval: time.Millisecond}
		opts.claimed = func(seqs []int64) {
			mu.Lock()
			claimed = append(claimed, seqs...)
			mu.Unlock()
		}
		marks := 0
		opts.beforeMark = func(context.Context) error {
			if marks++; marks == 3 {
				cancel()
			}
			return nil
		}
		if err := NewPublisher(db, js, opts, discard()).Run(ctx); err != nil {
			t.Fatal(err)
		}
		published := map[int64]bool{}
		for _, r := range rows(t, db) {
			published[r.Seq] = r.PublishedAt != nil
		}
		if len(claimed) < 30 {
			t.Fatalf("%d rows claimed before the stop, want at least 3 batches", len(claimed))
		}
		for _, seq := range claimed {
			if !published[seq] {
				t.Errorf("row %d claimed but not marked when Run returned", seq)
			}
		}
	})
}

// One publisher keeps several batches in flight and still publishes in
// creation order.
func TestOnePublisherPublishesInCreationOrder(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		ids := insertRows(t, db, 1000)
		opts := Options{Stream: b.Stream, BatchSize: 50, InFlight: 4, PollInterval: 5 * time.Millisecond}
		stop := runPublishers(t, 1, NewPublisher(db, js, opts, discard()))
		testutil.Eventually(t, 60*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
		stop()
		msgs := eventstest.ReadStream(t, js, b)
		assertExactlyOnce(t, msgs, ids, b)
		for i, m := range msgs {
			if i < len(ids) && m.Envelope.ID != ids[i] {
				t.Fatalf("stream message %d is event %s, want %s (creation order)", i, m.Envelope.ID, ids[i])
			}
		}
	})
}

// A row that becomes due behind Run's claims (here: one held back, then
// released while the backlog after it drains) is claimed again within
// about a PollInterval, not left until the backlog is done.
func TestRowDueBehindTheClaimsIsNotLeftForLast(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		ids := insertRows(t, db, 2000)
		first := rows(t, db)[0].Seq
		// Through InTx: on SQLite it queues with the publisher's writes
		// rather than polling for the lock while they keep it busy.
		due := func(at time.Time) {
			t.Helper()
			err := db.InTx(ctx, func(tx *sqldb.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE outbox SET next_attempt_at = $1 WHERE seq = $2`, at, first)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		due(time.Now().Add(time.Hour))

		var mu sync.Mutex
		var order []int64
		passed := make(chan struct{})
		opts := Options{Stream: b.Stream, BatchSize: 10, InFlight: 2, PollInterval: time.Millisecond}
		opts.claimed = func(seqs []int64) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, seqs...)
			if len(order) == 100 {
				close(passed)
			}
		}
		stop := runPublishers(t, 1, NewPublisher(db, js, opts, discard()))
		<-passed
		due(time.Now())
		testutil.Eventually(t, 60*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
		stop()

		mu.Lock()
		defer mu.Unlock()
		if last := order[len(order)-1]; last == first {
			t.Errorf("the row due behind the claims was claimed last, after the whole backlog")
		}
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
	})
}

func TestRowsParkAfterMaxAttempts(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		insertRows(t, db, 3)
		b.Server.Shutdown()

		p := NewPublisher(db, js, Options{Stream: b.Stream, MaxAttempts: 3, RetryBase: time.Millisecond, RetryMax: time.Millisecond}, discard())
		testutil.Eventually(t, 10*time.Second, "every row parked", func() bool {
			if _, err := p.PublishBatch(ctx); err != nil {
				t.Fatal(err)
			}
			return allRows(t, db, func(r Row) bool { return r.ParkedAt != nil })
		})
		for _, r := range rows(t, db) {
			if r.Attempts != 3 || r.PublishedAt != nil || r.LastError == "" {
				t.Errorf("parked row %d: attempts %d published_at %v error %q", r.Seq, r.Attempts, r.PublishedAt, r.LastError)
			}
		}
		// A parked row is never claimed again, and never deleted.
		// Once the last back-off has passed, only parking keeps them out.
		testutil.Eventually(t, 5*time.Second, "every row's back-off passed", func() bool {
			return allRows(t, db, func(r Row) bool { return !r.NextAttempt.After(time.Now()) })
		})
		if n, err := p.PublishBatch(ctx); n != 0 || err != nil {
			t.Fatalf("parked rows claimed: %d, %v", n, err)
		}
		if _, err := db.Exec(ctx, `DELETE FROM outbox`); !sqldb.IsRaised(err) {
			t.Fatalf("deleting unpublished rows: got %v, want the trigger's refusal", err)
		}
	})
}

// A row that cannot make a valid envelope is parked at once, and the rest
// of its batch is published.
func TestInvalidRowParkedOthersPublished(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		before := insertRows(t, db, 2)
		bad := uuid.NewString()
		now := sqldb.Timestamp(time.Now())
		if _, err := db.Exec(ctx, `INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at)
			VALUES ($1, 'identity.user.create', 'identity', $2, $3, '{}', $3, $3)`, bad, uuid.NewString(), now); err != nil {
			t.Fatal(err)
		}
		after := insertRows(t, db, 2)

		n, err := NewPublisher(db, js, Options{Service: "identity", Stream: b.Stream}, discard()).PublishBatch(ctx)
		if err != nil || n != 4 {
			t.Fatalf("published %d, err %v; want 4", n, err)
		}
		for _, r := range rows(t, db) {
			if r.Envelope.ID == bad {
				if r.ParkedAt == nil || r.PublishedAt != nil || !strings.Contains(r.LastError, "vocabulary") {
					t.Errorf("bad row: parked_at %v published_at %v error %q", r.ParkedAt, r.PublishedAt, r.LastError)
				}
			}
		}
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), append(before, after...), b)
	})
}

func TestStartPublishesInBackground(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		b := eventstest.Embedded(t)
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		ids := insertRows(t, db, 10)
		stop, err := Start(context.Background(), db, b.URL, Options{Service: "identity"}, discard())
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, "every row published", func() bool { return countUnpublished(t, db) == 0 })
		stop()
		stop() // idempotent
		_, js := eventstest.Connect(t, b)
		assertExactlyOnce(t, eventstest.ReadStream(t, js, b), ids, b)
		// Stream created by the publisher, with at least the minimum window.
		str, err := js.Stream(context.Background(), events.DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		if d := str.CachedInfo().Config.Duplicates; d < events.MinDuplicateWindow {
			t.Errorf("duplicate window %s", d)
		}
	})
}

func TestStartRefusesMalformedURL(t *testing.T) {
	db := sqltest.Open(t, sqldb.SQLite, sqlstore.Migrations)
	for _, u := range []string{"http://127.0.0.1:4222", "127.0.0.1:4222", "nats://"} {
		if _, err := Start(context.Background(), db, u, Options{}, discard()); err == nil {
			t.Errorf("Start(%q) accepted", u)
		}
	}
}

func TestEnsureStream(t *testing.T) {
	ctx := context.Background()
	b := eventstest.Embedded(t)
	_, js := eventstest.Connect(t, b)

	// An existing stream with a short window is widened.
	cfg := events.Stream{}.Config()
	cfg.Duplicates = 30 * time.Second
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, events.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := str.CachedInfo().Config.Duplicates; got != events.MinDuplicateWindow {
		t.Errorf("duplicate window %s, want %s", got, events.MinDuplicateWindow)
	}
	if err := EnsureStream(ctx, js); err != nil {
		t.Errorf("second EnsureStream: %v", err)
	}

	// A stream of that name on other subjects is not ours to change.
	other := events.Stream{Name: "OTHER", SubjectPrefix: "other"}
	if _, err := events.EnsureStream(ctx, js, other); err != nil {
		t.Fatal(err)
	}
	if _, err := events.EnsureStream(ctx, js, events.Stream{Name: "OTHER", SubjectPrefix: "different"}); err == nil {
		t.Error("EnsureStream accepted a stream with other subjects")
	}
}

func TestBackoff(t *testing.T) {
	o := Options{RetryBase: time.Second, RetryMax: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := o.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	// The back-off never outgrows the duplicate window.
	long := Options{RetryMax: time.Hour}.withDefaults()
	if long.RetryMax+long.AckTimeout >= long.Stream.DuplicateWindow {
		t.Errorf("RetryMax %s + AckTimeout %s not inside the window %s", long.RetryMax, long.AckTimeout, long.Stream.DuplicateWindow)
	}
}

func TestEnvelopeOnTheWire(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		db, _, js := ready(t, engine, b)
		at := time.Date(2025, 3, 1, 9, 30, 0, 123456000, time.UTC)
		id, user := uuid.NewString(), uuid.NewString()
		if _, err := db.Exec(ctx, `INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at)
			VALUES ($1, 'identity.user.created', 'identity', $2, $3, $4, $3, $3)`,
			id, user, at, fmt.Sprintf(`{"user_id": %q, "email": "ada@example.com"}`, user)); err != nil {
			t.Fatal(err)
		}
		if n, err := NewPublisher(db, js, Options{Stream: b.Stream}, discard()).PublishBatch(ctx); n != 1 || err != nil {
			t.Fatalf("published %d, %v", n, err)
		}
		msgs := eventstest.ReadStream(t, js, b)
		if len(msgs) != 1 {
			t.Fatalf("%d messages", len(msgs))
		}
		got := msgs[0].Envelope
		if got.ID != id || got.Subject != user || !got.Time.Equal(at) || got.Source != "identity" {
			t.Errorf("envelope %+v", got)
		}
		var data map[string]string
		if err := json.Unmarshal(got.Data, &data); err != nil || data["user_id"] != user || data["email"] != "ada@example.com" {
			t.Errorf("data %s (%v)", got.Data, err)
		}
	})
}

func TestLeaseBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want time.Duration
	}{
		{"default: AckTimeout and a margin", Options{}, 20 * time.Second},
		{"never shorter than AckTimeout", Options{AckTimeout: 10 * time.Second, Lease: time.Second}, 10 * time.Second},
		{"at most half the duplicate window", Options{Lease: time.Hour}, events.MinDuplicateWindow / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.opts.withDefaults().Lease; got != tc.want {
				t.Errorf("Lease = %s, want %s", got, tc.want)
			}
		})
	}
}
