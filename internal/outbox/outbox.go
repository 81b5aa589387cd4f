// Package outbox delivers a service's transactional outbox to NATS
// JetStream, at least once (platform.md section 6, operations.md section 6).
//
// A service writes its domain rows and an outbox row in one transaction; the
// row's id is the envelope id, fixed then and reused on every attempt. The
// publisher then, in one transaction per batch:
//
//  1. claims the due rows (published_at and parked_at null, next_attempt_at
//     passed) in creation order, FOR UPDATE SKIP LOCKED on PostgreSQL, so
//     replicas take disjoint batches; SQLite's transactions all hold the
//     write lock, so replicas there take turns;
//  2. publishes each to the stream on events.<type> with Nats-Msg-Id set to
//     the envelope id, asynchronously;
//  3. waits for every acknowledgement under its own deadline;
//  4. sets published_at on the acknowledged rows (an ack flagged duplicate
//     counts: the broker has the message), and on the others adds one to
//     attempts, records the error and sets an exponential next_attempt_at,
//     parking the row after MaxAttempts;
//  5. commits.
//
// The locks are held across the publish, so the rows of a publisher that
// dies between publishing and committing are simply claimed again, and the
// stream's deduplication window on Nats-Msg-Id absorbs the repeat. Nothing
// here deletes a row (the table's trigger refuses to delete an unpublished
// one anyway).
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// Options tune a Publisher. Zero fields take the defaults shown.
type Options struct {
	// Service is the publishing service; a row whose source differs is
	// parked rather than published under another service's name. Empty
	// skips the check.
	Service string
	// Stream is where events go (default: PLATFORM_EVENTS on events.<type>,
	// duplicate window 2 minutes).
	Stream events.Stream
	// BatchSize is how many rows one transaction claims (default 100).
	BatchSize int
	// AckTimeout bounds the wait for a batch's acknowledgements (default 5s).
	// On SQLite the database's write lock is held that long at worst.
	AckTimeout time.Duration
	// PollInterval is the pause when there was nothing to publish
	// (default 200ms). After a full batch the next one starts at once.
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

	// beforeCommit runs after the acknowledgements are recorded and before
	// the commit; an error rolls the batch back. Tests use it to kill a
	// publisher between publishing and committing.
	beforeCommit func(ctx context.Context) error
}

func (o Options) withDefaults() Options {
	o.Stream = o.Stream.WithDefaults()
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 5 * time.Second
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

// Run publishes until ctx is done, then finishes the batch in hand and
// returns nil. It makes sure the stream exists before publishing, and again
// after a batch in which a row failed: while the broker is unreachable it
// waits for it (with back-off) instead of spending the rows' attempts.
func (p *Publisher) Run(ctx context.Context) error {
	streamReady := false
	errWait := time.Duration(0)
	for ctx.Err() == nil {
		wait := p.opts.PollInterval
		if !streamReady {
			if _, err := events.EnsureStream(ctx, p.js, p.opts.Stream); err != nil {
				errWait = nextErrWait(errWait)
				if ctx.Err() == nil {
					p.logger.Warn("outbox: stream not available; rows wait", "stream", p.opts.Stream.Name, "retry_in", errWait.String(), "error", err.Error())
				}
				sleep(ctx, errWait)
				continue
			}
			streamReady = true
		}
		res, err := p.publishBatch(ctx)
		switch {
		case err != nil:
			errWait = nextErrWait(errWait)
			wait = errWait
			p.logger.Error("outbox: batch failed; rolled back", "retry_in", errWait.String(), "error", err.Error())
		case res.failed > 0:
			streamReady = false
		case res.claimed == p.opts.BatchSize:
			errWait, wait = 0, 0
		default:
			errWait = 0
		}
		sleep(ctx, wait)
	}
	return nil
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
	claimed, published, failed, parked int
}

// PublishBatch runs one claim-publish-commit cycle and returns how many
// rows it published. A row that fails is not an error (it is recorded on
// the row and retried later); an error means the transaction rolled back
// and every claimed row is as it was.
func (p *Publisher) PublishBatch(ctx context.Context) (int, error) {
	res, err := p.publishBatch(ctx)
	return res.published, err
}

type claimedRow struct {
	seq      int64
	env      events.Envelope
	attempts int
	msg      *nats.Msg
	future   jetstream.PubAckFuture
	err      error
	acked    bool
}

func (p *Publisher) publishBatch(ctx context.Context) (batchResult, error) {
	// Once rows are published, the acknowledgements are recorded and the
	// transaction committed even if ctx ends meanwhile (a shutdown): that
	// is bounded by the ack deadline, and it spares the broker a repeat.
	txCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.AckTimeout+30*time.Second)
	defer cancel()
	var res batchResult
	err := p.db.InTx(txCtx, func(tx *sqldb.Tx) error {
		res = batchResult{}
		rows, err := p.claim(txCtx, tx)
		if err != nil {
			return err
		}
		res.claimed = len(rows)
		if len(rows) == 0 {
			return nil
		}
		p.publish(rows)
		p.awaitAcks(rows)

		ackedAt := sqldb.Timestamp(p.db.Now())
		var done []int64
		for _, r := range rows {
			if r.acked {
				done = append(done, r.seq)
				continue
			}
			parked, err := p.recordFailure(txCtx, tx, r, ackedAt)
			if err != nil {
				return err
			}
			res.failed++
			if parked {
				res.parked++
			}
		}
		if err := markPublished(txCtx, tx, done, ackedAt); err != nil {
			return err
		}
		res.published = len(done)
		if p.opts.beforeCommit != nil {
			if err := p.opts.beforeCommit(txCtx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return batchResult{claimed: res.claimed}, err
	}
	if res.failed > 0 {
		p.logger.Warn("outbox: rows not acknowledged; retrying later", "published", res.published, "failed", res.failed, "parked", res.parked)
	} else if res.published > 0 {
		p.logger.Debug("outbox: batch published", "published", res.published)
	}
	return res, nil
}

// claim locks the next due rows in creation order.
func (p *Publisher) claim(ctx context.Context, tx *sqldb.Tx) ([]*claimedRow, error) {
	if tx.DB().Engine == sqldb.Postgres {
		// Walk the partial index outbox_pending in seq order and stop at
		// the batch. Without statistics (a fresh table, or a backlog that
		// grew faster than autovacuum analyses) the planner otherwise
		// sorts the whole backlog on every claim: 60–110 ms a batch.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL enable_bitmapscan = off`); err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
	}
	q, err := tx.Query(ctx, `SELECT seq, id, type, source, subject, time, data, attempts
		FROM outbox
		WHERE published_at IS NULL AND parked_at IS NULL AND next_attempt_at <= $1
		ORDER BY seq
		LIMIT $2`+tx.DB().SkipLocked(), tx.Now, p.opts.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer q.Close()
	var rows []*claimedRow
	for q.Next() {
		r := &claimedRow{}
		var data []byte
		err := q.Scan(&r.seq, &r.env.ID, &r.env.Type, &r.env.Source, &r.env.Subject, &r.env.Time, &data, &r.attempts)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		r.env.SpecVersion = events.SpecVersion
		r.env.Time = r.env.Time.UTC()
		r.env.Data = data
		rows = append(rows, r)
	}
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return rows, nil
}

// publish sends every row without waiting; a row whose envelope is not
// valid is not sent (it is parked: retrying cannot mend it).
func (p *Publisher) publish(rows []*claimedRow) {
	for _, r := range rows {
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
		r.msg = msg
		r.future, r.err = p.js.PublishMsgAsync(msg,
			jetstream.WithMsgID(r.env.ID),
			jetstream.WithExpectStream(p.opts.Stream.Name))
	}
}

// awaitAcks waits for every sent row's acknowledgement until the batch's
// deadline; a row still unanswered then has failed this attempt.
func (p *Publisher) awaitAcks(rows []*claimedRow) {
	deadline := time.NewTimer(p.opts.AckTimeout)
	defer deadline.Stop()
	expired := false
	for _, r := range rows {
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

// permanent marks a row failure that no retry can mend.
type permanent struct{ error }

const maxErrorText = 1000

// recordFailure counts the failed attempt, keeps the error and schedules
// the next attempt, or parks the row. It reports whether it parked.
func (p *Publisher) recordFailure(ctx context.Context, tx *sqldb.Tx, r *claimedRow, now time.Time) (bool, error) {
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
	next := now.Add(p.opts.Backoff(attempts))
	var parkedAt *time.Time
	if park {
		parkedAt = &now
	}
	_, err := tx.Exec(ctx, `UPDATE outbox
		SET attempts = $1, last_error = $2, next_attempt_at = $3, parked_at = $4
		WHERE seq = $5`, attempts, errText, next, parkedAt, r.seq)
	if err != nil {
		return false, fmt.Errorf("record failed attempt: %w", err)
	}
	if park {
		p.logger.Error("outbox: event parked; it will not be retried until an operator clears parked_at",
			"alert", true, "event_id", r.env.ID, "type", r.env.Type, "attempts", attempts, "error", errText)
	}
	return park, nil
}

// markPublished sets published_at on the acknowledged rows. attempts counts
// this successful attempt too.
func markPublished(ctx context.Context, tx *sqldb.Tx, seqs []int64, at time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, 0, len(seqs)+1)
	args = append(args, at)
	for i, s := range seqs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "$%d", i+2)
		args = append(args, s)
	}
	_, err := tx.Exec(ctx, `UPDATE outbox
		SET published_at = $1, attempts = attempts + 1, last_error = NULL
		WHERE seq IN (`+b.String()+`)`, args...)
	if err != nil {
		return fmt.Errorf("mark published: %w", err)
	}
	return nil
}
