// Package outbox delivers a service's transactional outbox to NATS
// JetStream, at least once (platform.md section 6, operations.md section 6).
//
// A service writes its domain rows and an outbox row in one transaction; the
// row's id is the envelope id, fixed then and reused on every attempt. The
// publisher then moves rows in batches, and no transaction stays open while
// it talks to the broker:
//
//  1. claim: one short transaction takes the next due rows (published_at
//     and parked_at null, next_attempt_at passed) in creation order, FOR
//     UPDATE SKIP LOCKED on PostgreSQL, and in the same statement leases
//     them by moving next_attempt_at to the end of the lease, so every
//     publisher passes them by until then (on SQLite the transaction holds
//     the database's write lock for that one statement);
//  2. publish each row to the stream on events.<type> with Nats-Msg-Id set
//     to the envelope id, asynchronously, in claim order;
//  3. wait for every acknowledgement until the batch's deadline;
//  4. mark: one short transaction sets published_at on the acknowledged rows
//     (an ack flagged duplicate counts: the broker has the message) and, on
//     the others, adds one to attempts, records the error and sets an
//     exponential next_attempt_at, parking the row after MaxAttempts or an
//     error no retry can mend.
//
// Run pipelines the batches: one goroutine claims, one publishes, one
// awaits and marks, each in claim order, with at most InFlight batches
// between claim and mark. The database's work on one batch so overlaps the
// broker's on the others, and replicas, on either engine, overlap too. Its
// claims continue after the previous batch rather than walk again past the
// rows in flight, and go back to the oldest due row at least every
// PollInterval.
//
// The lease is what recovers the rows of a publisher that dies between
// publishing and marking: they become due again when it ends, and the next
// claim publishes them again. The lease stays well inside the stream's
// duplicate window, so the broker recognises the repeated Nats-Msg-Id,
// keeps one copy and answers with a duplicate acknowledgement, which marks
// the row published. A mark that comes after its batch's lease ended sets
// published_at only on rows still unpublished, and records a failure only
// on a row still holding that very lease (next_attempt_at is the claim's
// token). Leases are read against the publishers' clocks (the database
// handle's Now), so replicas' clocks must agree to well within a lease.
// On PostgreSQL claims and marks commit without waiting for the WAL flush:
// a database crash can undo the last of them, and that too only means rows
// published again. Nothing here deletes a row (the table's trigger refuses
// to delete an unpublished one anyway).
package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// DefaultBatchSize is Options.BatchSize when it is not set.
const DefaultBatchSize = 1000

// Options tune a Publisher. Zero fields take the defaults shown.
type Options struct {
	// Service is the publishing service; a row whose source differs is
	// parked rather than published under another service's name. Empty
	// skips the check.
	Service string
	// Stream is where events go (default: PLATFORM_EVENTS on events.<type>,
	// duplicate window 2 minutes).
	Stream events.Stream
	// BatchSize is how many rows one claim takes (default DefaultBatchSize).
	// Each claim and mark is a transaction of several round trips whatever
	// its size, and each pipeline stage is one goroutine, so one publisher's
	// rate follows the batch (on PostgreSQL, two cores: 250 rows, about
	// 22,000 events/s; 1000 rows, 29,000–39,000). A quiet outbox is not
	// slowed: a claim takes what is due, however few.
	BatchSize int
	// InFlight is how many batches Run keeps between claim and mark
	// (default 3): while the broker acknowledges one, the database claims
	// or marks another.
	InFlight int
	// AckTimeout bounds the wait for a batch's acknowledgements, counted
	// from the end of its publishing (default 5s).
	AckTimeout time.Duration
	// Lease is how long claimed rows stay this publisher's before any
	// publisher may claim them again (default AckTimeout + 15s): what a
	// publisher that died mid-batch costs its rows in delay. It is never
	// shorter than AckTimeout, and at most half the stream's duplicate
	// window, so the repeat of a message already stored is deduplicated.
	Lease time.Duration
	// PollInterval is the pause when there was nothing to publish
	// (default 200ms). After a full batch the next one starts at once. It
	// is also the longest a row that became due behind Run's claims (a
	// retry, an ended lease) waits for them to come back to it.
	PollInterval time.Duration
	// MaxAttempts parks a row after this many failed attempts (default 50).
	MaxAttempts int
	// RetryBase and RetryMax shape the back-off after a failed attempt:
	// RetryBase·2^(attempts-1), at most RetryMax (defaults 500ms and 1m).
	// RetryMax plus AckTimeout must stay inside the stream's duplicate
	// window, so a retry of a message whose ack was lost is deduplicated;
	// a longer RetryMax is shortened to fit.
	RetryBase time.Duration
	RetryMax  time.Duration
	// Counted, when set, is told each marked batch's outcome: rows
	// published, failed attempts, rows parked (package observe counts
	// them for the publish rate).
	Counted func(published, failed, parked int)
	// TracerProvider starts the publish spans (default: OpenTelemetry's
	// global provider, which observe.StartTracing installs).
	TracerProvider trace.TracerProvider

	// claimed sees the seqs of every committed claim. Tests use it to check
	// that claims are disjoint.
	claimed func(seqs []int64)
	// beforeMark runs after the acknowledgements are in and before the mark
	// transaction; an error abandons the batch unmarked, as a publisher
	// that died then would. Tests use it to kill or stall a publisher.
	beforeMark func(ctx context.Context) error
}

func (o Options) withDefaults() Options {
	o.Stream = o.Stream.WithDefaults()
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.InFlight <= 0 {
		o.InFlight = 3
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 5 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = o.AckTimeout + 15*time.Second
	}
	o.Lease = max(o.Lease, o.AckTimeout)
	if limit := o.Stream.DuplicateWindow / 2; o.Lease > limit {
		o.Lease = limit
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 200 * time.Millisecond
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 50
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 500 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if limit := o.Stream.DuplicateWindow - o.AckTimeout - 10*time.Second; o.RetryMax > limit && limit > 0 {
		o.RetryMax = limit
	}
	if o.RetryBase > o.RetryMax {
		o.RetryBase = o.RetryMax
	}
	return o
}

// Backoff is the delay before the next attempt of a row that has now failed
// attempts times.
func (o Options) Backoff(attempts int) time.Duration {
	o = o.withDefaults()
	d := o.RetryBase
	for i := 1; i < attempts && d < o.RetryMax; i++ {
		d *= 2
	}
	return min(d, o.RetryMax)
}

// Publisher moves outbox rows to the stream.
type Publisher struct {
	db     *sqldb.DB
	js     jetstream.JetStream
	opts   Options
	logger *slog.Logger
}

// NewPublisher returns a publisher over db's outbox table.
func NewPublisher(db *sqldb.DB, js jetstream.JetStream, opts Options, logger *slog.Logger) *Publisher {
	return &Publisher{db: db, js: js, opts: opts.withDefaults(), logger: logger}
}

// EnsureStream creates the platform's stream, PLATFORM_EVENTS on events.>,
// when it is missing (see events.EnsureStream).
func EnsureStream(ctx context.Context, js jetstream.JetStream) error {
	_, err := events.EnsureStream(ctx, js, events.Stream{})
	return err
}

// Run publishes until ctx is done, then finishes the batches in hand (their
// acknowledgements awaited at most AckTimeout, then marked) and returns
// nil. It makes sure the stream exists before publishing, and again after
// a batch in which a row failed: while the broker is unreachable it waits
// for it (with back-off) instead of spending the rows' attempts.
func (p *Publisher) Run(ctx context.Context) error {
	// A batch passes three stages, each one goroutine taking batches in
	// claim order: this loop claims, the sender publishes, the marker
	// awaits the acknowledgements and marks. slots bounds the batches
	// between claim and mark.
	slots := make(chan struct{}, p.opts.InFlight)
	toSend := make(chan *batch, p.opts.InFlight)
	toMark := make(chan *batch, p.opts.InFlight)
	// brokerTrouble tells this loop that a message was refused or failed:
	// it checks the stream before claiming more.
	var brokerTrouble atomic.Bool
	var stages sync.WaitGroup
	stages.Add(2)
	go func() {
		defer stages.Done()
		defer close(toMark)
		for b := range toSend {
			if p.publish(b) {
				brokerTrouble.Store(true)
			}
			toMark <- b
		}
	}()
	go func() {
		defer stages.Done()
		for b := range toMark {
			res, err := p.finish(ctx, b)
			<-slots
			if err != nil {
				p.logger.Error("outbox: batch not marked; its rows are published again when the lease ends",
					"rows", len(b.rows), "lease", p.opts.Lease.String(), "err", err.Error())
				continue
			}
			if res.failed > 0 {
				brokerTrouble.Store(true)
			}
		}
	}()
	defer func() {
		close(toSend)
		stages.Wait()
	}()

	streamReady := false
	errWait := time.Duration(0)
	// Each claim continues after the last row of the one before (the
	// cursor), so it does not walk again past the rows in flight, and
	// starts again from the oldest due row when nothing is due after the
	// cursor and at least every PollInterval: rows that became due behind
	// it (retries, ended leases, inserts that committed late) wait no
	// longer than that.
	after, rewound := int64(0), time.Now()
	for ctx.Err() == nil {
		if brokerTrouble.Swap(false) {
			streamReady = false
		}
		if !streamReady {
			if _, err := events.EnsureStream(ctx, p.js, p.opts.Stream); err != nil {
				errWait = nextErrWait(errWait)
				switch {
				case ctx.Err() != nil:
				case brokerUnreachable(p.js, err):
					p.logger.WarnContext(ctx, "outbox: the broker is unreachable; rows wait in the outbox", "retry_in", errWait.String())
				default:
					p.logger.WarnContext(ctx, "outbox: stream not available; rows wait in the outbox", "stream", p.opts.Stream.Name, "retry_in", errWait.String(), "err", err.Error())
				}
				sleep(ctx, errWait)
				continue
			}
			streamReady = true
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		if time.Since(rewound) >= p.opts.PollInterval {
			after, rewound = 0, time.Now()
		}
		b, err := p.claim(ctx, after)
		if err == nil && len(b.rows) == 0 && after > 0 {
			// Nothing due after the cursor: look from the oldest at once.
			<-slots
			after, rewound = 0, time.Now()
			continue
		}
		if err != nil || len(b.rows) == 0 {
			<-slots
			wait := p.opts.PollInterval
			if err != nil && ctx.Err() == nil {
				errWait = nextErrWait(errWait)
				wait = errWait
				p.logger.Error("outbox: claim failed", "retry_in", errWait.String(), "err", err.Error())
			}
			sleep(ctx, wait)
			continue
		}
		errWait = 0
		after = b.rows[len(b.rows)-1].seq
		toSend <- b
		if len(b.rows) < p.opts.BatchSize {
			sleep(ctx, p.opts.PollInterval)
		}
	}
	return nil
}

// brokerUnreachable reports whether err comes from having no connection
// to NATS: a request made while disconnected fails with nats' "outbound
// buffer limit exceeded" (the client buffers nothing), which says nothing
// useful to an operator.
func brokerUnreachable(js jetstream.JetStream, err error) bool {
	if errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrConnectionClosed) {
		return true
	}
	return js.Conn() != nil && !js.Conn().IsConnected()
}

func nextErrWait(d time.Duration) time.Duration {
	if d == 0 {
		return 500 * time.Millisecond
	}
	return min(2*d, 30*time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

type batchResult struct {
	published, failed, parked int
}

// PublishBatch runs one claim-publish-mark cycle and returns how many rows
// the broker acknowledged. A row that fails is not an error (it is recorded
// on the row and retried later). An error from the claim means nothing was
// claimed; an error from the mark means the claimed rows stay leased,
// unmarked, and are published again when the lease ends.
func (p *Publisher) PublishBatch(ctx context.Context) (int, error) {
	b, err := p.claim(ctx, 0)
	if err != nil || len(b.rows) == 0 {
		return 0, err
	}
	p.publish(b)
	res, err := p.finish(ctx, b)
	return res.published, err
}

// batch is one claim's rows on their way to the stream.
type batch struct {
	rows []*claimedRow
	// lease is the next_attempt_at the claim wrote: a row still holding it
	// is still this batch's.
	lease time.Time
	// deadline ends the wait for acknowledgements.
	deadline time.Time
}

type claimedRow struct {
	seq      int64
	env      events.Envelope
	attempts int
	// traceparent is the writing request's trace context (the row's
	// column, nil when none); span is this attempt's publish span in it.
	traceparent *string
	span        trace.Span
	future      jetstream.PubAckFuture
	err         error
	acked       bool
}

// The claims take the next due rows after seq $4 (Run's cursor; 0 for the
// oldest) in creation order and lease them in one statement. On PostgreSQL the ARRAY(…) subquery locks the rows it
// returns, skipping rows another claim is taking, and the update then
// finds them by primary key.
const (
	claimPostgres = `UPDATE outbox SET next_attempt_at = $2
		WHERE seq = ANY(ARRAY(
			SELECT seq FROM outbox
			WHERE published_at IS NULL AND parked_at IS NULL AND next_attempt_at <= $1 AND seq > $4
			ORDER BY seq
			LIMIT $3
			FOR UPDATE SKIP LOCKED))
		RETURNING seq, id, type, source, subject, time, data, attempts, traceparent`
	claimSQLite = `UPDATE outbox SET next_attempt_at = $2
		WHERE seq IN (
			SELECT seq FROM outbox
			WHERE published_at IS NULL AND parked_at IS NULL AND next_attempt_at <= $1 AND seq > $4
			ORDER BY seq
			LIMIT $3)
		RETURNING seq, id, type, source, subject, time, data, attempts, traceparent`
)

// asyncCommit makes a PostgreSQL transaction commit without waiting for
// its WAL to reach the disk, which otherwise costs each claim and each mark
// a flush. Only the publisher's own transactions do it. A crash can then
// undo the last fraction of a second of them, which is safe: an undone
// claim leaves its rows due again, an undone mark leaves its rows
// unpublished, and either way they are published again and the stream's
// duplicate window keeps one copy.
const asyncCommit = `set_config('synchronous_commit', 'off', true)`

// claim leases the next due rows after seq after, in creation order.
func (p *Publisher) claim(ctx context.Context, after int64) (*batch, error) {
	b := &batch{}
	err := p.db.InTx(ctx, func(tx *sqldb.Tx) error {
		b.rows = b.rows[:0]
		b.lease = sqldb.Timestamp(tx.Now.Add(p.opts.Lease))
		query := claimSQLite
		if tx.DB().Engine == sqldb.Postgres {
			query = claimPostgres
			// Walk the partial index outbox_pending in seq order and stop
			// at the batch. Without statistics (a fresh table, or a backlog
			// that grew faster than autovacuum analyses) the planner
			// otherwise sorts the whole backlog on every claim: 60–110 ms
			// a batch. And commit without waiting for the WAL flush (see
			// asyncCommit), in the same round trip.
			if _, err := tx.Exec(ctx, `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true), `+asyncCommit); err != nil {
				return fmt.Errorf("claim: %w", err)
			}
		}
		q, err := tx.Query(ctx, query, tx.Now, b.lease, p.opts.BatchSize, after)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		defer q.Close()
		for q.Next() {
			r := &claimedRow{}
			var data []byte
			err := q.Scan(&r.seq, &r.env.ID, &r.env.Type, &r.env.Source, &r.env.Subject, &r.env.Time, &data, &r.attempts, &r.traceparent)
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			r.env.SpecVersion = events.SpecVersion
			r.env.Time = r.env.Time.UTC()
			r.env.Data = data
			b.rows = append(b.rows, r)
		}
		if err := q.Err(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		return nil
	})
	if err != nil {
		return &batch{}, err
	}
	// RETURNING lists rows in no promised order; publishing is by seq.
	slices.SortFunc(b.rows, func(x, y *claimedRow) int { return cmp.Compare(x.seq, y.seq) })
	if p.opts.claimed != nil && len(b.rows) > 0 {
		seqs := make([]int64, len(b.rows))
		for i, r := range b.rows {
			seqs[i] = r.seq
		}
		p.opts.claimed(seqs)
	}
	return b, nil
}

// publish sends every row of b without waiting and starts its ack
// deadline; a row whose envelope is not valid is not sent (it is parked:
// retrying cannot mend it). It reports whether the connection refused a
// message outright.
func (p *Publisher) publish(b *batch) (refused bool) {
	tp := p.opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	tracer := tp.Tracer(instrumentation)
	for _, r := range b.rows {
		if err := r.env.Validate(); err != nil {
			r.err = permanent{err}
			continue
		}
		if p.opts.Service != "" && r.env.Source != p.opts.Service {
			r.err = permanent{fmt.Errorf("source %q is not this publisher's service %q", r.env.Source, p.opts.Service)}
			continue
		}
		body, err := r.env.MarshalJSON()
		if err != nil {
			r.err = permanent{err}
			continue
		}
		msg := nats.NewMsg(p.opts.Stream.Subject(r.env.Type))
		msg.Data = body
		msg.Header.Set(events.AttemptHeader, strconv.Itoa(r.attempts+1))
		if r.traceparent != nil {
			r.span = p.traceHeader(tracer, r, msg.Header)
		}
		r.future, r.err = p.js.PublishMsgAsync(msg,
			jetstream.WithMsgID(r.env.ID),
			jetstream.WithExpectStream(p.opts.Stream.Name))
		if r.err != nil {
			refused = true
		}
	}
	b.deadline = time.Now().Add(p.opts.AckTimeout)
	return refused
}

// finish awaits b's acknowledgements and marks its rows. Once rows are
// published they are marked even if ctx ends meanwhile (a shutdown): that
// is bounded by the ack deadline, and it spares the broker a repeat.
func (p *Publisher) finish(ctx context.Context, b *batch) (batchResult, error) {
	p.awaitAcks(b)
	endSpans(b)
	markCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if p.opts.beforeMark != nil {
		if err := p.opts.beforeMark(markCtx); err != nil {
			return batchResult{}, err
		}
	}
	res, err := p.mark(markCtx, b)
	if err != nil {
		return batchResult{}, err
	}
	if p.opts.Counted != nil {
		p.opts.Counted(res.published, res.failed, res.parked)
	}
	if res.failed > 0 {
		p.logger.Warn("outbox: rows not acknowledged; retrying later", "published", res.published, "failed", res.failed, "parked", res.parked)
	} else {
		p.logger.Debug("outbox: batch published", "published", res.published)
	}
	return res, nil
}

// awaitAcks waits for every sent row's acknowledgement until the batch's
// deadline; a row still unanswered then has failed this attempt.
func (p *Publisher) awaitAcks(b *batch) {
	deadline := time.NewTimer(time.Until(b.deadline))
	defer deadline.Stop()
	expired := false
	for _, r := range b.rows {
		if r.future == nil {
			continue
		}
		if !expired {
			select {
			case ack := <-r.future.Ok():
				r.acked = ack != nil
			case err := <-r.future.Err():
				r.err = err
			case <-deadline.C:
				expired = true
			}
			if !expired {
				continue
			}
		}
		// Past the deadline: take what has already arrived, nothing more.
		select {
		case ack := <-r.future.Ok():
			r.acked = ack != nil
		case err := <-r.future.Err():
			r.err = err
		default:
			r.err = fmt.Errorf("no acknowledgement within %s", p.opts.AckTimeout)
		}
	}
}

// mark records b's outcome in one transaction: published_at on the
// acknowledged rows, a failed attempt on the others.
func (p *Publisher) mark(ctx context.Context, b *batch) (batchResult, error) {
	var res batchResult
	err := p.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res = batchResult{}
		if tx.DB().Engine == sqldb.Postgres {
			if _, err := tx.Exec(ctx, `SELECT `+asyncCommit); err != nil {
				return fmt.Errorf("mark: %w", err)
			}
		}
		var done []int64
		for _, r := range b.rows {
			if r.acked {
				done = append(done, r.seq)
				continue
			}
			parked, err := p.recordFailure(ctx, tx, r, b.lease)
			if err != nil {
				return err
			}
			res.failed++
			if parked {
				res.parked++
			}
		}
		if err := markPublished(ctx, tx, done); err != nil {
			return err
		}
		res.published = len(done)
		return nil
	})
	return res, err
}

// permanent marks a row failure that no retry can mend.
type permanent struct{ error }

const maxErrorText = 1000

// recordFailure counts the failed attempt, keeps the error and schedules
// the next attempt, or parks the row, provided the row is still under
// lease (another publisher may have claimed it since, if this batch
// outlived its lease). It reports whether it parked.
func (p *Publisher) recordFailure(ctx context.Context, tx *sqldb.Tx, r *claimedRow, lease time.Time) (bool, error) {
	attempts := r.attempts + 1
	errText := "unknown failure"
	if r.err != nil {
		errText = r.err.Error()
	}
	if len(errText) > maxErrorText {
		errText = errText[:maxErrorText]
	}
	var perm permanent
	park := attempts >= p.opts.MaxAttempts || errors.As(r.err, &perm)
	next := tx.Now.Add(p.opts.Backoff(attempts))
	var parkedAt *time.Time
	if park {
		parkedAt = &tx.Now
	}
	res, err := tx.Exec(ctx, `UPDATE outbox
		SET attempts = $1, last_error = $2, next_attempt_at = $3, parked_at = $4
		WHERE seq = $5 AND next_attempt_at = $6 AND published_at IS NULL AND parked_at IS NULL`,
		attempts, errText, next, parkedAt, r.seq, lease)
	if err != nil {
		return false, fmt.Errorf("record failed attempt: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if park {
		p.logger.Error("outbox: event parked; it will not be retried until an operator clears parked_at",
			"alert", true, "event_id", r.env.ID, "type", r.env.Type, "attempts", attempts, "err", errText)
	}
	return park, nil
}

// markPublished sets published_at on the acknowledged rows not yet marked
// (by another publisher that claimed them after this batch's lease ended).
// attempts counts this successful attempt too. The rows travel as one
// parameter, so the statement's text is the same for every batch (SQLite's
// statements are prepared once per text).
func markPublished(ctx context.Context, tx *sqldb.Tx, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	const update = `UPDATE outbox
		SET published_at = $1, attempts = attempts + 1, last_error = NULL
		WHERE published_at IS NULL AND `
	var err error
	if tx.DB().Engine == sqldb.Postgres {
		_, err = tx.Exec(ctx, update+`seq = ANY($2)`, tx.Now, seqs)
	} else {
		list := make([]byte, 0, 8*len(seqs)+2)
		list = append(list, '[')
		for i, s := range seqs {
			if i > 0 {
				list = append(list, ',')
			}
			list = strconv.AppendInt(list, s, 10)
		}
		list = append(list, ']')
		_, err = tx.Exec(ctx, update+`seq IN (SELECT value FROM json_each($2))`, tx.Now, string(list))
	}
	if err != nil {
		return fmt.Errorf("mark published: %w", err)
	}
	return nil
}
