package courier_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/testutil"
)

// queue is a claimable list of items for the pipeline's tests.
type queue struct {
	mu       sync.Mutex
	due      []int
	claims   int
	recorded map[int]int
	records  int
}

func (q *queue) add(items ...int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due = append(q.due, items...)
}

func (q *queue) claim(_ context.Context, limit int) ([]int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(limit, len(q.due))
	out := append([]int(nil), q.due[:n]...)
	q.due = q.due[n:]
	q.claims++
	return out, nil
}

func (q *queue) record(_ context.Context, outcomes []int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.records++
	for _, o := range outcomes {
		q.recorded[o]++
	}
}

func (q *queue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.recorded)
}

// Every claimed item is worked on and recorded once, items the work
// settles itself (ok false) are not recorded, outcomes share records,
// and a wake ends a long pause at once.
func TestPipelineRecordsEachItemOnce(t *testing.T) {
	q := &queue{recorded: map[int]int{}}
	for i := range 500 {
		q.add(i)
	}
	wake := make(chan struct{}, 1)
	p := courier.Pipeline[int, int]{
		Batch: 50, Workers: 8, Poll: time.Hour, BusyPoll: time.Hour, Wake: wake,
		Claim: q.claim,
		Work: func(_ context.Context, c int) (int, bool) {
			return c, c%100 != 7 // the 7s settle themselves
		},
		Record: q.record,
		Logger: slog.New(slog.DiscardHandler), What: "test",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	testutil.Eventually(t, 10*time.Second, "the first items recorded", func() bool { return q.count() == 495 })
	// The claims emptied the queue and the loop now pauses for an hour:
	// only a wake brings it back for new work.
	q.add(1000, 1001)
	wake <- struct{}{}
	testutil.Eventually(t, 10*time.Second, "the new items recorded after a wake", func() bool { return q.count() == 497 })
	cancel()
	<-done
	q.mu.Lock()
	defer q.mu.Unlock()
	for item, n := range q.recorded {
		if n != 1 {
			t.Errorf("item %d recorded %d times, want once", item, n)
		}
	}
	if q.recorded[7] != 0 || q.recorded[107] != 0 {
		t.Error("an item its work settled was recorded")
	}
	if q.records >= 497 {
		t.Errorf("%d records for 497 outcomes, want them shared", q.records)
	}
}

// Items claimed but not started when the pipeline stops are left to
// their leases, not worked on with a cancelled context.
func TestPipelineStopLeavesUnstartedItems(t *testing.T) {
	q := &queue{recorded: map[int]int{}}
	for i := range 20 {
		q.add(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	worked := 0
	p := courier.Pipeline[int, int]{
		Batch: 20, Workers: 1, Poll: time.Hour, BusyPoll: time.Hour,
		Claim: q.claim,
		Work: func(ctx context.Context, c int) (int, bool) {
			mu.Lock()
			worked++
			first := worked == 1
			mu.Unlock()
			if first {
				close(started)
				<-release
			}
			return c, true
		},
		Record: q.record,
		Logger: slog.New(slog.DiscardHandler), What: "test",
	}
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	<-started
	cancel()
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if worked != 1 || q.count() != 1 {
		t.Errorf("%d items worked on and %d recorded after the stop, want only the one in hand (1, 1)", worked, q.count())
	}
}

// Outcomes that finish one after another within Gather of the first share
// one record, though each finishes after the record loop took the one
// before: the few that finish during a commit do not each pay for one.
func TestPipelineGathersOutcomesIntoOneRecord(t *testing.T) {
	q := &queue{recorded: map[int]int{}}
	for i := range 10 {
		q.add(i)
	}
	var worked atomic.Int64
	p := courier.Pipeline[int, int]{
		Batch: 50, Workers: 1, Poll: time.Hour, BusyPoll: time.Hour, Gather: 5 * time.Second,
		Claim: q.claim,
		Work: func(_ context.Context, c int) (int, bool) {
			// One at a time, spaced: the spacing is the case under test
			// (each outcome comes after the record loop took the last).
			time.Sleep(2 * time.Millisecond)
			worked.Add(1)
			return c, true
		},
		Record: q.record,
		Logger: slog.New(slog.DiscardHandler), What: "test",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	// Once the tenth is worked its outcome goes to the record loop, well
	// within the 5 s; a stop then records what it gathered at once.
	testutil.Eventually(t, 4*time.Second, "ten items worked", func() bool { return worked.Load() == 10 })
	cancel()
	<-done
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.recorded) != 10 || q.records != 1 {
		t.Errorf("%d outcomes in %d records, want 10 in one", len(q.recorded), q.records)
	}
}

// Once takes one batch and no more, works it, and records its outcomes in
// one Record (not the items whose work settled them); it says how many it
// claimed, and 0 once nothing is due.
func TestPipelineOnce(t *testing.T) {
	q := &queue{recorded: map[int]int{}}
	for i := range 15 {
		q.add(i)
	}
	p := courier.Pipeline[int, int]{
		Batch: 10, Workers: 4,
		Claim:  q.claim,
		Work:   func(_ context.Context, c int) (int, bool) { return c, c != 7 },
		Record: q.record,
		Logger: slog.New(slog.DiscardHandler), What: "test",
	}
	for _, want := range []struct{ claimed, recorded, records int }{{10, 9, 1}, {5, 14, 2}, {0, 14, 2}} {
		n, err := p.Once(context.Background())
		if err != nil || n != want.claimed {
			t.Fatalf("Once = %d, %v; want %d claimed", n, err, want.claimed)
		}
		q.mu.Lock()
		got, records := len(q.recorded), q.records
		q.mu.Unlock()
		if got != want.recorded || records != want.records {
			t.Errorf("after a turn: %d recorded in %d records, want %d in %d", got, records, want.recorded, want.records)
		}
	}
}
