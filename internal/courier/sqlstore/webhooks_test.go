package sqlstore_test

import (
	"context"
	"fmt"
	"io/fs"
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// Enqueue gives each event of a batch one delivery per enabled endpoint
// of its account subscribed to its type, and nothing else: not to a
// disabled endpoint, another account's, one subscribed to other types,
// nor for an event whose subject is not an account id in the platform's
// spelling. Applied again, the batch adds nothing; a batch larger than
// one insert's rows is delivered whole, in its order.
func TestEnqueueSetWise(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		a, b, c := ids.New(), ids.New(), ids.New()
		endpoint := func(account string, disabled bool, types ...string) string {
			t.Helper()
			e, err := s.CreateEndpoint(ctx, courier.Endpoint{ID: ids.New(), AccountID: account, URL: "https://hooks.example.com/" + account,
				EventTypes: types}, []byte("sealed"))
			if err != nil {
				t.Fatal(err)
			}
			if disabled {
				if _, err := s.UpdateEndpoint(ctx, account, e.ID, courier.EndpointPatch{Disabled: &disabled}); err != nil {
					t.Fatal(err)
				}
			}
			return e.ID
		}
		a1 := endpoint(a, false, "identity.member.joined", "identity.member.removed")
		a2 := endpoint(a, false, "identity.account.updated")
		endpoint(a, true, "identity.member.joined")
		b1 := endpoint(b, false, "identity.member.joined")
		event := func(typ, subject string) consumer.Event {
			return consumer.Event{Ctx: ctx, Envelope: events.Envelope{SpecVersion: events.SpecVersion, ID: ids.New(), Type: typ,
				Source: "identity", Subject: subject, Time: time.Now().UTC(), Data: []byte(`{}`)}}
		}
		batch := []consumer.Event{
			event("identity.member.joined", a),
			event("identity.member.joined", b),
			event("identity.account.updated", a),
			event("identity.member.joined", c),
			event("identity.user.created", a),
			event("identity.member.joined", strings.ToUpper(a)),
			event("identity.member.removed", a),
		}
		want := [][2]string{{a1, batch[0].ID}, {b1, batch[1].ID}, {a2, batch[2].ID}, {a1, batch[6].ID}}
		enqueue := func(batch []consumer.Event) {
			t.Helper()
			if err := db.InTx(ctx, func(tx *sqldb.Tx) error { return sqlstore.Enqueue(ctx, tx, batch) }); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
		}
		enqueue(batch)
		enqueue(batch)
		if got := deliveries(t, db); !equalPairs(got, want) {
			t.Errorf("deliveries = %v, want %v", got, want)
		}

		var large []consumer.Event
		for range 1234 {
			e := event("identity.member.joined", b)
			large = append(large, e)
			want = append(want, [2]string{b1, e.ID})
		}
		enqueue(large)
		if got := deliveries(t, db); !equalPairs(got, want) {
			t.Errorf("after a large batch: %d deliveries, want %d in the batch's order", len(got), len(want))
		}
		if n := pendingCount(t, db); n != len(want) {
			t.Errorf("%d deliveries pending, want %d", n, len(want))
		}
	})
}

// deliveries lists (endpoint, event) of every delivery in insertion order.
func deliveries(t *testing.T, db *sqldb.DB) [][2]string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT endpoint_id, event_id FROM webhook_deliveries ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalPairs(a, b [][2]string) bool { return slices.Equal(a, b) }

func pendingCount(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClaimKeepsTheStreamOrderPerQueue: deliveries to one endpoint about
// one subject are claimed one at a time in the stream's order, a later
// one only once the earlier one is delivered or finally failed (not while
// it is in flight, waits for a retry, or its lease has passed to be
// claimed again); other endpoints' queues go meanwhile. An event the
// stream handed over after a later one of its queue goes first.
func TestClaimKeepsTheStreamOrderPerQueue(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		a, b := ids.New(), ids.New()
		endpoint := func(account string) string {
			t.Helper()
			e, err := s.CreateEndpoint(ctx, courier.Endpoint{ID: ids.New(), AccountID: account, URL: "https://hooks.example.com/" + account,
				EventTypes: []string{"identity.member.joined", "identity.member.removed"}}, []byte("sealed"))
			if err != nil {
				t.Fatal(err)
			}
			return e.ID
		}
		endpoint(a)
		endpoint(b)
		event := func(typ, subject string, seq uint64) consumer.Event {
			return consumer.Event{Ctx: ctx, Seq: seq, Envelope: events.Envelope{SpecVersion: events.SpecVersion, ID: ids.New(), Type: typ,
				Source: "identity", Subject: subject, Time: time.Now().UTC(), Data: []byte(`{}`)}}
		}
		enqueue := func(batch ...consumer.Event) {
			t.Helper()
			if err := db.InTx(ctx, func(tx *sqldb.Tx) error { return sqlstore.Enqueue(ctx, tx, batch) }); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
		}
		claim := func(lease time.Duration) map[string]courier.ClaimedDelivery {
			t.Helper()
			got, err := s.ClaimDeliveries(ctx, 50, lease)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]courier.ClaimedDelivery{}
			for _, c := range got {
				out[c.EventID] = c
			}
			return out
		}
		expect := func(step string, got map[string]courier.ClaimedDelivery, want ...consumer.Event) {
			t.Helper()
			ok := len(got) == len(want)
			for _, w := range want {
				if _, in := got[w.ID]; !in {
					ok = false
				}
			}
			if !ok {
				var names []string
				for id := range got {
					names = append(names, id)
				}
				t.Fatalf("%s: claimed %v, want %d deliveries: %v", step, names, len(want), want)
			}
		}
		record := func(c courier.ClaimedDelivery, ok bool, next *time.Time) {
			t.Helper()
			if err := s.RecordAttempts(ctx, []courier.AttemptOutcome{{Delivery: c, OK: ok, Next: next,
				Attempt: courier.DeliveryAttempt{At: time.Now(), StatusCode: 200}}}); err != nil {
				t.Fatal(err)
			}
		}
		joined, removed, again := event("identity.member.joined", a, 10), event("identity.member.removed", a, 11), event("identity.member.joined", a, 13)
		other := event("identity.member.joined", b, 12)
		enqueue(joined, removed, other)
		enqueue(again)

		first := claim(time.Minute)
		expect("the heads", first, joined, other)
		expect("while the head is in flight", claim(time.Minute))
		record(first[other.ID], true, nil)

		due := time.Now().Add(-time.Second)
		record(first[joined.ID], false, &due)
		retry := claim(-time.Second) // a lease that has already passed
		expect("the head's retry", retry, joined)
		reclaimed := claim(time.Minute)
		expect("the head again, its lease passed", reclaimed, joined)
		if err := s.RecordAttempts(ctx, []courier.AttemptOutcome{{Delivery: retry[joined.ID], OK: true}}); err != nil {
			t.Fatal(err) // the passed lease's outcome is not recorded
		}
		expect("while the head is claimed again", claim(time.Minute))
		// The head fails for good on its second claim: the next one goes.
		record(reclaimed[joined.ID], false, nil)
		second := claim(time.Minute)
		expect("after the head failed for good", second, removed)

		// An earlier event of the queue the stream handed over late goes
		// at once; the later ones still wait for both.
		late := event("identity.member.joined", a, 5)
		enqueue(late)
		third := claim(time.Minute)
		expect("the late earlier event", third, late)
		record(second[removed.ID], true, nil)
		expect("while the late one is in flight", claim(time.Minute))
		record(third[late.ID], true, nil)
		expect("the last", claim(time.Minute), again)
	})
}

// TestAttemptErrorsBeforeCategoriesAreScrubbed: attempts recorded with a
// raw dial error before error categories existed keep, after the
// migration, only a category and its safe message; a success stays as it
// was.
func TestAttemptErrorsBeforeCategoriesAreScrubbed(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		before := fstest.MapFS{}
		if err := fs.WalkDir(sqlstore.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Compare(pathpkg.Base(path), "00008") >= 0 {
				return err
			}
			b, err := fs.ReadFile(sqlstore.Migrations, path)
			before[path] = &fstest.MapFile{Data: b}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		db := sqltest.Open(t, engine, before)
		account, endpoint, delivery := ids.New(), ids.New(), ids.New()
		now := sqldb.Timestamp(time.Now())
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.Exec(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
		exec(`INSERT INTO webhook_endpoints (id, account_id, url, event_types, secret_sealed, created_at, updated_at)
			VALUES ($1, $2, 'https://hooks.example.com/', '[]', $3, $4, $4)`, endpoint, account, []byte("sealed"), now)
		exec(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, body, status, next_attempt_at, created_at, updated_at)
			VALUES ($1, $2, $3, 'identity.member.joined', '{}', 'succeeded', $4, $4, $4)`, delivery, endpoint, ids.New(), now)
		raw := []struct {
			status         int
			err            string
			category, safe string
		}{
			{0, "dial: lookup hooks.internal on 10.0.0.2:53: no such host", "dns", "the endpoint's host name could not be resolved"},
			{0, "dial: dial tcp 203.0.113.9:443: connect: connection refused", "refused", "the endpoint's host refused the connection"},
			{0, "timeout: no answer within 10s", "timeout", "no answer in time"},
			{0, "the endpoint's address is loopback, private or link-local", "blocked_address", "the endpoint's host is at an address that is not public; no connection was made"},
			{0, "remote error: tls: handshake failure", "tls", "the endpoint's certificate is not valid"},
			{0, "read: connection reset by peer", "connection", "the connection failed before an answer came"},
			{503, "", "http_status", "the endpoint answered 503, not 2xx"},
			{200, "", "", ""},
		}
		for i, r := range raw {
			exec(`INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response, error) VALUES ($1, $2, $3, $4, '', $5)`,
				delivery, now, r.status, i, r.err)
		}
		if _, err := db.Migrate(ctx, sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		s := sqlstore.New(db)
		got, err := s.Deliveries(ctx, account, endpoint, 0, 10)
		if err != nil || len(got) != 1 || len(got[0].Log) != len(raw) {
			t.Fatalf("Deliveries = %+v, %v", got, err)
		}
		for i, a := range got[0].Log {
			if a.ErrorCategory != raw[i].category || a.Error != raw[i].safe {
				t.Errorf("attempt %q: %q %q, want %q %q", raw[i].err, a.ErrorCategory, a.Error, raw[i].category, raw[i].safe)
			}
		}
	})
}

// TestConsumerLeaseHasOneHolder: the lease goes to one of many replicas
// asking at once; its holder renews it, the others are refused until it
// expires or is released, and a release by another is a no-op.
func TestConsumerLeaseHasOneHolder(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		const name = "courier-webhooks"
		var wg sync.WaitGroup
		var winners atomic.Int32
		var winner atomic.Value
		for i := range 16 {
			wg.Go(func() {
				holder := fmt.Sprint("replica-", i)
				held, err := s.HoldConsumerLease(ctx, name, holder, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if held {
					winners.Add(1)
					winner.Store(holder)
				}
			})
		}
		wg.Wait()
		if n := winners.Load(); n != 1 {
			t.Fatalf("%d replicas hold the lease, want 1", n)
		}
		first := winner.Load().(string)
		hold := func(holder string, ttl time.Duration, want bool) {
			t.Helper()
			if held, err := s.HoldConsumerLease(ctx, name, holder, ttl); err != nil || held != want {
				t.Fatalf("HoldConsumerLease(%s) = %v, %v; want %v", holder, held, err, want)
			}
		}
		hold(first, -time.Second, true) // renewed, to a time already past
		hold("late", time.Minute, true) // expired: taken over
		hold(first, time.Minute, false)
		if err := s.ReleaseConsumerLease(ctx, name, first); err != nil {
			t.Fatal(err)
		}
		hold(first, time.Minute, false) // a release by another left it
		if err := s.ReleaseConsumerLease(ctx, name, "late"); err != nil {
			t.Fatal(err)
		}
		hold(first, time.Minute, true)
	})
}
