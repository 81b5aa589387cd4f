package sqlstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
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
