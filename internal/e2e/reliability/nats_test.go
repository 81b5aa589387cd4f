//go:build e2e

package reliability

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/testutil"
)

// TestNATSOutageAndPublisherKill: with NATS stopped under load the outbox
// grows and nothing is marked published; with NATS back everything is
// delivered. Then the publishers (identity's own and a standalone `events
// publish`) are killed with SIGKILL while publishing under load; after a
// restart everything is delivered, and no envelope id is in the stream
// twice.
func TestNATSOutageAndPublisherKill(t *testing.T) {
	nats := startNATS(t)
	s := newStack(t, startPostgres(t), stackOptions{identity: e2e.Env{"EVENTS_URL": nats.natsURL()}})
	buyer := s.register(t, "buyer@example.com")
	run := uniq()
	// The load outlives restarts of identity, which replace s.identity
	// (on the same port), so it keeps the address rather than read the
	// field while a restart writes it.
	identityURL := s.identity.URL
	load := func() *loadRun {
		return startLoad(4, func(w, i int) (int, string, error) {
			status, body, err := send("POST", identityURL+"/v1/accounts", buyer.token, map[string]any{"name": fmt.Sprintf("events %s %d %d %d", run, w, i, time.Now().UnixNano())})
			id, _ := body["id"].(string)
			return status, id, err
		})
	}
	published := func() int {
		return count(t, s.identityDB, `SELECT count(*) FROM outbox WHERE published_at IS NOT NULL`)
	}
	pending := func() int { return count(t, s.identityDB, `SELECT count(*) FROM outbox WHERE published_at IS NULL`) }
	testutil.Eventually(t, 20*time.Second, "the first events to be delivered", func() bool { return pending() == 0 && published() > 0 })

	// NATS down under load.
	l := load()
	nats.stop(t, syscall.SIGTERM)
	before, pendingBefore := published(), pending()
	testutil.Eventually(t, 20*time.Second, "the outbox to grow while NATS is down", func() bool { return pending() >= pendingBefore+40 })
	if got := published(); got != before {
		t.Errorf("%d rows marked published while NATS was down", got-before)
	}
	if n := count(t, s.identityDB, `SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL`); n != 0 {
		t.Errorf("%d rows parked during the outage", n)
	}
	nats.start(t)
	// The load keeps adding rows, so the outbox is never empty while it
	// runs, and how many rows wait at any moment follows the load's rate.
	// What must happen is exact: every row written before NATS returned is
	// delivered.
	written := count(t, s.identityDB, `SELECT coalesce(max(seq), 0) FROM outbox`)
	testutil.Eventually(t, 60*time.Second, "every row written during the outage delivered after NATS returns", func() bool {
		return count(t, s.identityDB, `SELECT count(*) FROM outbox WHERE published_at IS NULL AND seq <= $1`, written) == 0
	})
	if got := published(); got < before+40 {
		t.Errorf("%d rows published after NATS returned, want at least the 40 written during the outage", got-before)
	}

	// Publishers killed mid-batch under load: identity's own, and a
	// standalone one sharing the outbox.
	standalone := e2e.Spawn(t, e2e.Env{"DATABASE_URL": s.identityEnv["DATABASE_URL"], "EVENTS_URL": nats.natsURL()}, "events", "publish", "--service", "identity")
	for round := 0; round < 3; round++ {
		p0 := published()
		testutil.Eventually(t, 20*time.Second, "publishing under load", func() bool { return published() >= p0+20 })
		standalone.Signal(syscall.SIGKILL)
		s.identity.Signal(syscall.SIGKILL)
		if !standalone.Wait(10*time.Second) || !s.identity.Wait(10*time.Second) {
			t.Fatal("a killed process did not exit")
		}
		s.restartIdentity(t)
		standalone = e2e.Spawn(t, e2e.Env{"DATABASE_URL": s.identityEnv["DATABASE_URL"], "EVENTS_URL": nats.natsURL()}, "events", "publish", "--service", "identity")
	}
	res := l.stop()
	t.Logf("load: %v, %d transport errors", res.statuses, res.errors)
	testutil.Eventually(t, 60*time.Second, "every row delivered", func() bool { return pending() == 0 })

	// The stream holds each outbox row once, and only those.
	b := &eventstest.Broker{URL: nats.natsURL(), Stream: events.Stream{}.WithDefaults()}
	_, js := eventstest.Connect(t, b)
	msgs := eventstest.ReadStream(t, js, b)
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.Envelope.ID]++
		if seen[m.Envelope.ID] == 2 {
			t.Errorf("event %s is in the stream twice", m.Envelope.ID)
		}
	}
	rows, err := s.identityDB.Query(t.Context(), `SELECT id FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		n++
		if seen[id] != 1 {
			t.Errorf("outbox row %s is in the stream %d times, want once", id, seen[id])
		}
	}
	if len(seen) != n {
		t.Errorf("the stream holds %d distinct events, the outbox %d rows", len(seen), n)
	}
	for _, id := range res.ids {
		if count(t, s.identityDB, `SELECT count(*) FROM accounts WHERE id = $1`, id) != 1 {
			t.Errorf("account %s answered 201 but is not stored", id)
		}
	}
}
