package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// orderReceiver is one HTTP receiver behind every endpoint of the test:
// it answers the first attempt of every seventh event 500 (so retries
// happen mid-stream), and records, per subject, the events it accepted
// in arrival order, how many requests of one subject were ever in flight
// at once, and how often consecutive arrivals changed subject.
type orderReceiver struct {
	*httptest.Server
	mu        sync.Mutex
	got       map[string][]string // subject → accepted event ids, in arrival order
	seen      map[string]bool     // event ids answered once
	flaky     map[string]bool     // event ids whose first attempt fails
	inFlight  map[string]int
	overlap   int // the most requests of one subject in flight at once
	last      string
	switches  int
	accepted  int
	malformed int
}

func newOrderReceiver(t *testing.T) *orderReceiver {
	r := &orderReceiver{got: map[string][]string{}, seen: map[string]bool{}, flaky: map[string]bool{}, inFlight: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *orderReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var env events.Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.ID != req.Header.Get("webhook-id") {
		r.mu.Lock()
		r.malformed++
		r.mu.Unlock()
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.inFlight[env.Subject]++
	r.overlap = max(r.overlap, r.inFlight[env.Subject])
	first := !r.seen[env.ID]
	r.seen[env.ID] = true
	fail := first && r.flaky[env.ID]
	r.mu.Unlock()
	// Another subject's request may arrive while this one is answered.
	defer func() {
		r.mu.Lock()
		r.inFlight[env.Subject]--
		r.mu.Unlock()
	}()
	if fail {
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	r.mu.Lock()
	if !slices.Contains(r.got[env.Subject], env.ID) {
		r.got[env.Subject] = append(r.got[env.Subject], env.ID)
		r.accepted++
		if r.last != "" && r.last != env.Subject {
			r.switches++
		}
		r.last = env.Subject
	}
	r.mu.Unlock()
	io.WriteString(w, "ok")
}

// TestDeliveriesKeepTheStreamOrderPerSubject publishes 1,000 events
// about 10 accounts, each with an endpoint at one receiver, and runs two
// courier replicas (two stream consumers under the consumer lease, two
// delivery loops) on one database: every subject's events arrive in the
// stream's order, even with retries among them and never two of one
// subject at once, while the subjects interleave.
func TestDeliveriesKeepTheStreamOrderPerSubject(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		ctx := context.Background()
		r := newOrderReceiver(t)
		sealer, _ := seal.New([]byte("0123456789abcdef0123456789abcdef"))
		types := []string{"identity.member.joined", "identity.member.removed", "identity.member.role_changed", "identity.account.updated"}
		const subjects, total = 10, 1000
		var accounts []string
		for range subjects {
			account := uuid.NewString()
			id := uuid.NewString()
			if _, err := e.store.CreateEndpoint(ctx, courier.Endpoint{ID: id, AccountID: account, URL: r.URL + "/" + account, EventTypes: types},
				sealer.Seal(id, []byte(courier.NewSecret()))); err != nil {
				t.Fatal(err)
			}
			accounts = append(accounts, account)
		}
		e.runConsumer()
		e.runConsumer()
		want := map[string][]string{}
		for i := range total {
			account := accounts[(i*7+i/13)%subjects] // uneven runs of one subject
			id := e.publish(types[i%len(types)], account)
			want[account] = append(want[account], id)
			if i%7 == 3 {
				r.mu.Lock()
				r.flaky[id] = true
				r.mu.Unlock()
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range 2 {
			d := webhooks.NewDeliverer(e.store, e.hooks, webhooks.NewClient(true), webhooks.Options{Schedule: fastSchedule, Poll: 20 * time.Millisecond}, discard())
			wg.Go(func() { d.Run(runCtx) })
		}
		testutil.Eventually(t, 120*time.Second, "every event at the receiver", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.accepted == total
		})
		cancel()
		wg.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, account := range accounts {
			if got := r.got[account]; !slices.Equal(got, want[account]) {
				t.Errorf("subject %s: %d events arrived out of the stream's order (first at %d)", account, len(got), firstDifference(got, want[account]))
			}
		}
		if r.overlap != 1 {
			t.Errorf("up to %d requests of one subject were in flight at once, want 1", r.overlap)
		}
		if r.malformed != 0 {
			t.Errorf("%d requests were not an envelope", r.malformed)
		}
		// Ten subjects one after another would switch 9 times.
		if r.switches < total/10 {
			t.Errorf("the subjects switched %d times in %d arrivals: they did not interleave", r.switches, total)
		}
	})
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestConsumerLeaseTakesOver: of two replicas, one consumes; when it
// stops, the other takes the lease over and the events published after
// are enqueued all the same.
func TestConsumerLeaseTakesOver(t *testing.T) {
	e := newEnv(t, sqldb.SQLite, true)
	r := newReceiver(t)
	c := e.createEndpoint(r.URL+"/hook", "identity.member.joined")
	r.secret = c.Secret
	eventstest.EnsureStream(t, e.js, e.broker)
	start := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = webhooks.ConsumeFrom(ctx, e.db, e.js, nil, discard()); close(done) }()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	enqueued := func(id string) func() bool {
		return func() bool {
			var n int
			err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE event_id = $1`, id).Scan(&n)
			return err == nil && n == 1
		}
	}
	stopFirst := start()
	first := e.publish("identity.member.joined", e.accountID)
	testutil.Eventually(t, 10*time.Second, "the first replica to enqueue", enqueued(first))
	start()
	stopFirst()
	second := e.publish("identity.member.joined", e.accountID)
	testutil.Eventually(t, 3*webhooks.LeaseRenew, "the second replica to take over", enqueued(second))
}
