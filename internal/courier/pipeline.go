package courier

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Pipeline is the shape of courier's two delivery loops (the send loop
// and the webhook deliverer): claim due work under a lease, do each item
// once, record the outcomes. It runs the three as a pipeline, so that
// neither the claim's transaction nor the record's leaves the workers
// idle, as a claim-work-record cycle did: the next batch is claimed while
// the workers are on the current one, and outcomes are recorded as they
// finish, in one transaction for as many as finish within Gather of the
// first (up to a batch). At most two batches are claimed and not
// yet recorded. A process that dies leaves what it claimed to be claimed
// again when the leases end; on a stop, items not yet started are left
// the same way, and outcomes already known are still recorded.
type Pipeline[C, O any] struct {
	// Batch is the most one claim takes and one record holds; Workers how
	// many items are worked on at once.
	Batch, Workers int
	// Poll is the pause after a claim that found nothing, BusyPoll after
	// one that found less than a batch.
	Poll, BusyPoll time.Duration
	// Wake, when it receives, ends a pause at once (new work committed).
	Wake <-chan struct{}
	// Gather is how long a record waits for more outcomes, from its first,
	// while it holds less than a batch: a commit costs the same for one
	// outcome as for fifty, and a record of the few that finished during
	// the last commit paid it for each few.
	Gather time.Duration
	// Claim leases up to limit due items.
	Claim func(ctx context.Context, limit int) ([]C, error)
	// Work does one item; it may record a rare outcome itself and return
	// ok false, leaving nothing for Record.
	Work func(ctx context.Context, c C) (o O, ok bool)
	// Record records outcomes in one transaction, on a context that
	// outlives the pipeline's.
	Record func(ctx context.Context, outcomes []O)
	Logger *slog.Logger
	// What names the loop in its log lines.
	What string
}

// RecordGather is the delivery loops' Pipeline.Gather: a few milliseconds
// on a status nobody waits for, against a commit for every few outcomes.
const RecordGather = 5 * time.Millisecond

// Run runs the pipeline until ctx is done.
func (p Pipeline[C, O]) Run(ctx context.Context) {
	work := make(chan C, 2*p.Batch)
	done := make(chan O, p.Batch)
	room := make(chan struct{}, 1)
	var inFlight atomic.Int64
	settled := func(n int) {
		inFlight.Add(-int64(n))
		select {
		case room <- struct{}{}:
		default:
		}
	}
	var workers sync.WaitGroup
	for range p.Workers {
		workers.Go(func() {
			for c := range work {
				if ctx.Err() != nil {
					settled(1) // its lease ends and it is claimed again
					continue
				}
				if o, ok := p.Work(ctx, c); ok {
					done <- o
				} else {
					settled(1)
				}
			}
		})
	}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		p.recordLoop(ctx, done, settled)
	}()
	p.claimLoop(ctx, work, &inFlight, room)
	close(work)
	workers.Wait()
	close(done)
	<-recorded
}

// Once is one turn of the pipeline, for tests and tools that drive a loop
// by hand: it claims one batch, works it with up to Workers items at once,
// and records the outcomes in one Record. It returns how many it claimed.
func (p Pipeline[C, O]) Once(ctx context.Context) (int, error) {
	claimed, err := p.Claim(ctx, p.Batch)
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	work := make(chan C)
	var (
		workers  sync.WaitGroup
		mu       sync.Mutex
		outcomes []O
	)
	for range min(p.Workers, len(claimed)) {
		workers.Go(func() {
			for c := range work {
				if o, ok := p.Work(ctx, c); ok {
					mu.Lock()
					outcomes = append(outcomes, o)
					mu.Unlock()
				}
			}
		})
	}
	for _, c := range claimed {
		work <- c
	}
	close(work)
	workers.Wait()
	if len(outcomes) > 0 {
		p.Record(context.WithoutCancel(ctx), outcomes)
	}
	return len(claimed), nil
}

// claimLoop claims for the workers while no more than a batch is claimed
// and unrecorded.
func (p Pipeline[C, O]) claimLoop(ctx context.Context, work chan<- C, inFlight *atomic.Int64, room <-chan struct{}) {
	wait := p.Poll
	for ctx.Err() == nil {
		if inFlight.Load() > int64(p.Batch) {
			select {
			case <-ctx.Done():
			case <-room:
			}
			continue
		}
		claimed, err := p.Claim(ctx, p.Batch)
		switch {
		case err != nil && ctx.Err() == nil:
			p.Logger.Warn(p.What+": claim failed", "err", err.Error())
			wait = min(max(wait, p.Poll)*2, 10*time.Second)
		case len(claimed) > 0:
			// Work comes in streams: after a claim that found some, look
			// again soon rather than after a whole Poll.
			wait = min(p.Poll, p.BusyPoll)
		default:
			wait = p.Poll
		}
		inFlight.Add(int64(len(claimed)))
		for _, c := range claimed {
			work <- c
		}
		if len(claimed) == p.Batch && err == nil {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.Wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// recordLoop records outcomes as they come, in one transaction for each
// run of them that finished within Gather of its first.
func (p Pipeline[C, O]) recordLoop(ctx context.Context, done <-chan O, settled func(int)) {
	batch := make([]O, 0, p.Batch)
	rctx := context.WithoutCancel(ctx)
	gather := time.NewTimer(0)
	<-gather.C
	for o := range done {
		batch = append(batch[:0], o)
		gather.Reset(p.Gather)
	more:
		for len(batch) < p.Batch {
			select {
			case o, ok := <-done:
				if !ok {
					break more
				}
				batch = append(batch, o)
			case <-gather.C:
				break more
			}
		}
		gather.Stop()
		p.Record(rctx, batch)
		settled(len(batch))
	}
}
