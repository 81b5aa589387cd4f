// Package consumer is the platform's event consumer: a durable JetStream
// pull consumer with explicit acknowledgements that applies each event once
// (platform.md section 6, Delivery).
//
// It takes the messages in batches (up to Config.Batch, as many as the
// stream has ready) and decodes each envelope strictly. Then, in one
// transaction of the consumer's own database for the whole batch, it
// inserts the envelope ids into consumed_events (unique per consumer) and
// runs the handler once for the events whose ids were not there, and after
// the commit acknowledges every message of the batch. The insert comes first:
// when an id is already there, the event was applied before (a
// redelivery after a lost ack, or a publisher's retry outside the
// stream's duplicate window), so its message is acknowledged and skipped.
// A transaction per batch rather than per event is what lets one consumer
// keep up with the stream: the commit, and on PostgreSQL the round trips,
// are shared by the batch.
//
// When the batch's transaction fails (a handler's error, or the
// database's), it rolls back whole and each of its events is applied
// again alone, in its own transaction, so one event that fails never
// holds back or takes down the others. When the handler fails on an event
// alone, the transaction rolls back (the id with it) and the message is
// redelivered after a back-off; after MaxAttempts failed attempts, or at
// once for an error marked Permanent or a message that is not a valid
// envelope, the event is parked in parked_events with the error, an alert
// is logged, and the consumer continues with the next one. Each event's
// handling is its own span, continuing the trace of its traceparent
// header, in a batch as alone.
//
// # Order
//
// Ordering is per subject only, never global: the stream keeps each
// publisher's order, but several publisher replicas, redeliveries and
// back-off all let a later event overtake an earlier one, even for one
// entity. A handler whose effect depends on order compares the envelope's
// time (when the state change happened) with the time of the last event it
// applied for the same subject, kept in its own row, and applies the event
// only when it is newer, in the same transaction:
//
//	UPDATE account_names SET name = $2, as_of = $3
//	WHERE account_id = $1 AND as_of < $3
//
// An older event is then a no-op that still counts as consumed. Events of
// one type that carry the full state (account.updated carries the name) can
// always be applied this way; events that are facts to accumulate
// (member.joined, member.removed) are applied by their subject's latest
// time per (account, user), so a removal older than a join never undoes it.
// Times are compared as instants (time.Time.After), never as text.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// Event is one event of the batch a Handler applies: its envelope, its
// sequence in the stream, and the context of its own span (continuing the
// publisher's trace), under which the statements made for it alone
// belong.
type Event struct {
	Ctx context.Context
	// Seq is the event's sequence in the stream: the stream's order, for
	// a handler that keeps it across batches and replicas.
	Seq uint64
	events.Envelope
}

// Handler applies a batch of events, in the stream's order, inside the
// consumer's transaction, which has recorded their ids: each event is
// fresh and in the batch once. A handler whose work is the same for every
// event does it set-wise (a statement for the batch, not one per event);
// one whose work is per event is Each of a function of one event.
// Returning an error rolls the transaction back; each event of the batch
// is applied again alone (a batch of one), then retried after a back-off,
// or parked when the error is Permanent or the attempts are spent.
type Handler func(ctx context.Context, tx *sqldb.Tx, batch []Event) error

// Each is the Handler that applies a batch's events one by one with h,
// each under its own span.
func Each(h func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error) Handler {
	return func(_ context.Context, tx *sqldb.Tx, batch []Event) error {
		for _, e := range batch {
			if err := h(e.Ctx, tx, e.Envelope); err != nil {
				return err
			}
		}
		return nil
	}
}

// Config configures a Consumer. Zero fields take the defaults shown.
type Config struct {
	// Name is the durable consumer's name on the stream, and the consumer
	// column of its tables. Required: letters, digits, - and _.
	Name string
	// Stream is the stream to read (default PLATFORM_EVENTS on events.>).
	Stream events.Stream
	// Types limits the consumer to these event types (NATS subjects
	// events.<type>; wildcards allowed, e.g. "identity.member.*"). Empty
	// reads every event.
	Types []string
	// MaxAttempts is how many times the handler may fail on one event
	// before it is parked (default 5).
	MaxAttempts int
	// Backoff is the consumer's redelivery schedule on the server:
	// Backoff[n-1] after the n-th delivery failed or went unacknowledged,
	// the last value repeating (default 1s, 5s, 30s, 2m). While a handler
	// runs, the consumer tells the server it is in progress, so a slow
	// handler is not redelivered under it.
	Backoff []time.Duration
	// Batch is how many messages are fetched ahead, and the most one
	// transaction applies (default 64).
	Batch int
	// Committed, when set, is called after each transaction that applied
	// fresh events has committed (sqldb.Tx.AfterCommit), so a loop that
	// works on what the handler wrote can start at once instead of at its
	// next poll.
	Committed func()
	// TracerProvider starts the spans of the events' handling (default:
	// OpenTelemetry's global provider, which observe.StartTracing
	// installs).
	TracerProvider trace.TracerProvider

	// skipAck, in tests, leaves a message unacknowledged after its work
	// committed, as a consumer that dies between commit and ack.
	skipAck func(e events.Envelope) bool
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (c Config) withDefaults() (Config, error) {
	if !namePattern.MatchString(c.Name) {
		return c, fmt.Errorf("consumer name %q: 1 to 64 letters, digits, - or _", c.Name)
	}
	c.Stream = c.Stream.WithDefaults()
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}
	}
	if c.Batch <= 0 {
		c.Batch = 64
	}
	return c, nil
}

func (c Config) delay(failures int) time.Duration {
	return c.Backoff[min(max(failures, 1), len(c.Backoff))-1]
}

// Consumer applies events from the stream with a Handler.
type Consumer struct {
	db      *sqldb.DB
	js      jetstream.JetStream
	cfg     Config
	handle  Handler
	logger  *slog.Logger
	durable jetstream.Consumer
}

// permanentError marks an error retrying cannot mend.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so the event is parked at once instead of retried.
func Permanent(err error) error { return permanentError{err} }

// New creates (or updates) the durable consumer on the stream, creating the
// stream when it is missing, and returns a Consumer ready to Run. The
// database must have the consumer tables (Migrate).
func New(ctx context.Context, db *sqldb.DB, js jetstream.JetStream, cfg Config, h Handler, logger *slog.Logger) (*Consumer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("consumer: a handler is required")
	}
	if _, err := events.EnsureStream(ctx, js, cfg.Stream); err != nil {
		return nil, err
	}
	var filters []string
	for _, t := range cfg.Types {
		filters = append(filters, cfg.Stream.Subject(t))
	}
	if len(filters) == 0 {
		filters = []string{cfg.Stream.Wildcard()}
	}
	// One back-off value per delivery the server may make but the last.
	maxDeliver := cfg.MaxAttempts + 2
	backoff := make([]time.Duration, maxDeliver-1)
	for i := range backoff {
		backoff[i] = cfg.delay(i + 1)
	}
	consumerCfg := jetstream.ConsumerConfig{
		Durable:       cfg.Name,
		Description:   "platform events consumer " + cfg.Name,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		BackOff:       backoff,
		// Two deliveries beyond the handler's attempts: one in which the
		// consumer parks an event whose last attempt died with the
		// process, and one spare should that parking itself fail.
		MaxDeliver:    maxDeliver,
		MaxAckPending: cfg.Batch * 4,
	}
	if len(filters) == 1 {
		// Servers before 2.10 know only the single filter.
		consumerCfg.FilterSubject = filters[0]
	} else {
		consumerCfg.FilterSubjects = filters
	}
	durable, err := js.CreateOrUpdateConsumer(ctx, cfg.Stream.Name, consumerCfg)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cfg.Name, err)
	}
	return &Consumer{db: db, js: js, cfg: cfg, handle: h, logger: logger.With("consumer", cfg.Name), durable: durable}, nil
}

// Run processes messages in batches until ctx is done, then returns nil
// after the batch in hand.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		it, err := c.durable.Messages(jetstream.PullMaxMessages(c.cfg.Batch))
		if err != nil {
			c.logger.Warn("events: cannot pull; retrying", "err", err.Error())
			sleep(ctx, time.Second)
			continue
		}
		c.drain(ctx, it)
		it.Stop()
	}
	return nil
}

// gather is how long a batch waits for one more message once it has one:
// the iterator hands over what it already holds at once, and a stream of
// events fills a batch instead of leaving a transaction per event.
const gather = time.Millisecond

func (c *Consumer) drain(ctx context.Context, it jetstream.MessagesContext) {
	batch := make([]jetstream.Msg, 0, c.cfg.Batch)
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("events: pull interrupted; resuming", "err", err.Error())
				sleep(ctx, 200*time.Millisecond)
			}
			return
		}
		batch = append(batch[:0], msg)
		var interrupted error
		for len(batch) < c.cfg.Batch {
			msg, err := it.Next(jetstream.NextMaxWait(gather))
			if err != nil {
				if !errors.Is(err, nats.ErrTimeout) {
					interrupted = err
				}
				break
			}
			batch = append(batch, msg)
		}
		c.processBatch(context.WithoutCancel(ctx), batch)
		if interrupted != nil {
			if ctx.Err() == nil {
				c.logger.Warn("events: pull interrupted; resuming", "err", interrupted.Error())
			}
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// pending is a delivery of a valid envelope that is due an attempt.
type pending struct {
	msg  jetstream.Msg
	meta *jetstream.MsgMetadata
	env  events.Envelope
}

// processBatch handles a batch of deliveries to their ends. Messages that
// are not valid envelopes, and redeliveries past MaxAttempts, are settled
// one by one as before; the others are applied together in one
// transaction and acknowledged after its commit. When that transaction
// fails, nothing of it is kept and each of its events is applied alone,
// so an event that fails is retried or parked by itself and the others
// still complete.
func (c *Consumer) processBatch(ctx context.Context, msgs []jetstream.Msg) {
	if len(msgs) == 1 {
		c.process(ctx, msgs[0])
		return
	}
	stop := c.inProgress(msgs)
	defer stop()
	due := make([]pending, 0, len(msgs))
	for _, msg := range msgs {
		if p, ok := c.settleOrDue(ctx, msg); ok {
			due = append(due, p)
		}
	}
	switch len(due) {
	case 0:
		return
	case 1:
		c.attempt(ctx, due[0])
		return
	}
	if err := c.applyBatch(ctx, due); err != nil {
		c.logger.Debug("events: batch rolled back; applying its events one by one", "events", len(due), "err", err.Error())
		for _, p := range due {
			c.attempt(ctx, p)
		}
		return
	}
	for _, p := range due {
		if c.cfg.skipAck != nil && c.cfg.skipAck(p.env) {
			continue
		}
		c.ack(p.msg, p.env)
	}
}

// applyBatch applies due in one transaction: one insert records every
// envelope id not yet consumed (a copy of an id earlier in the batch is
// left to that first one), then the handler runs once for the fresh
// events, each with the span of its own trace. When the transaction
// fails, every span of the batch ends with its error: each event's work
// was rolled back.
func (c *Consumer) applyBatch(ctx context.Context, due []pending) error {
	batch := make([]Event, len(due))
	ends := make([]func(error), len(due))
	for i, p := range due {
		batch[i].Envelope, batch[i].Seq = p.env, p.meta.Sequence.Stream
		batch[i].Ctx, ends[i] = c.startSpan(ctx, p.msg, p.env)
	}
	err := c.db.InTx(ctx, func(tx *sqldb.Tx) error {
		fresh, err := c.record(ctx, tx, due)
		if err != nil {
			return err
		}
		apply := make([]Event, 0, len(fresh))
		for _, e := range batch {
			if fresh[e.ID] {
				// A repeat of the id later in this batch is applied here.
				delete(fresh, e.ID)
				apply = append(apply, e)
			}
		}
		if len(apply) == 0 {
			return nil
		}
		if c.cfg.Committed != nil {
			tx.AfterCommit(c.cfg.Committed)
		}
		return c.handle(ctx, tx, apply)
	})
	for _, end := range ends {
		end(err)
	}
	return err
}

// record inserts the envelope ids of due into consumed_events in one
// statement and returns the ids that were not there before.
func (c *Consumer) record(ctx context.Context, tx *sqldb.Tx, due []pending) (map[string]bool, error) {
	var q strings.Builder
	q.WriteString(`INSERT INTO consumed_events (consumer, event_id, type, subject, time, processed_at) VALUES `)
	args := make([]any, 0, 1+len(due)*4+1)
	args = append(args, c.cfg.Name, tx.Now)
	seen := make(map[string]bool, len(due))
	for _, p := range due {
		if seen[p.env.ID] {
			continue
		}
		seen[p.env.ID] = true
		n := len(args)
		if n > 2 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "($1, $%d, $%d, $%d, $%d, $2)", n+1, n+2, n+3, n+4)
		args = append(args, p.env.ID, p.env.Type, p.env.Subject, sqldb.Timestamp(p.env.Time))
	}
	q.WriteString(` ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id`)
	rows, err := tx.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("record event ids: %w", err)
	}
	defer rows.Close()
	fresh := make(map[string]bool, len(seen))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("record event ids: %w", err)
		}
		fresh[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("record event ids: %w", err)
	}
	if len(fresh) < len(seen) {
		c.logger.Debug("events: already applied; skipped", "events", len(seen)-len(fresh))
	}
	return fresh, nil
}

// inProgress tells the server, at half the first back-off, that msgs are
// still being worked on, until the returned stop is called: a batch's
// last message waits for the ones before it, and should the batch fall
// back to one event at a time, for all of them.
func (c *Consumer) inProgress(msgs []jetstream.Msg) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(c.cfg.Backoff[0]/2, 5*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				for _, msg := range msgs {
					_ = msg.InProgress()
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// process handles one delivery to its end: acknowledged, scheduled for
// another attempt, or parked.
func (c *Consumer) process(ctx context.Context, msg jetstream.Msg) {
	if p, ok := c.settleOrDue(ctx, msg); ok {
		c.attempt(ctx, p)
	}
}

// settleOrDue settles a delivery that needs no attempt (no metadata, not
// a valid envelope, or a redelivery past MaxAttempts), and otherwise
// returns it as due.
func (c *Consumer) settleOrDue(ctx context.Context, msg jetstream.Msg) (pending, bool) {
	meta, err := msg.Metadata()
	if err != nil {
		c.logger.Error("events: message without JetStream metadata", "err", err.Error())
		_ = msg.Term()
		return pending{}, false
	}
	deliveries := int(meta.NumDelivered)
	env, err := events.Decode(msg.Data())
	if err != nil {
		c.park(ctx, msg, meta, nil, fmt.Errorf("not a valid envelope: %w", err))
		return pending{}, false
	}
	if deliveries > c.cfg.MaxAttempts {
		// Deliveries count more than attempts: messages fetched ahead are
		// redelivered when their back-off passes while they wait behind a
		// slow one, and a lost ack brings an applied event back. Only an
		// event that was never applied died with its handler.
		applied, err := c.applied(ctx, env.ID)
		switch {
		case err != nil:
			// Unacknowledged, it comes back once more (MaxDeliver's spare).
			c.logger.Error("events: cannot check a redelivered event; it will be redelivered", "event_id", env.ID, "err", err.Error())
		case applied:
			c.ack(msg, env)
		default:
			c.park(ctx, msg, meta, &env, fmt.Errorf("delivered %d times without completing: the process died or lost its connection while handling it", deliveries))
		}
		return pending{}, false
	}
	return pending{msg: msg, meta: meta, env: env}, true
}

// attempt applies one due event alone and settles its delivery.
func (c *Consumer) attempt(ctx context.Context, p pending) {
	msg, meta, env := p.msg, p.meta, p.env
	deliveries := int(meta.NumDelivered)
	stop := c.inProgress([]jetstream.Msg{msg})
	err := c.applyBatch(ctx, []pending{p})
	stop()
	var perm permanentError
	switch {
	case err == nil:
		if c.cfg.skipAck != nil && c.cfg.skipAck(env) {
			return
		}
		c.ack(msg, env)
	case errors.As(err, &perm) || deliveries >= c.cfg.MaxAttempts:
		c.park(ctx, msg, meta, &env, err)
	default:
		// Left unacknowledged, the message comes back after the server's
		// back-off for this delivery.
		c.logger.Warn("events: handler failed; will retry", "event_id", env.ID, "type", env.Type,
			"attempt", deliveries, "retry_in", c.cfg.delay(deliveries).String(), "err", err.Error())
	}
}

// ack acknowledges an event whose work is committed. When the ack is lost,
// a redelivery finds the id and skips.
func (c *Consumer) ack(msg jetstream.Msg, env events.Envelope) {
	if err := msg.Ack(); err != nil {
		c.logger.Warn("events: ack failed; a redelivery will be skipped", "event_id", env.ID, "err", err.Error())
	}
}

// applied reports whether the event's work was committed.
func (c *Consumer) applied(ctx context.Context, id string) (bool, error) {
	var n int
	err := c.db.QueryRow(ctx, `SELECT count(*) FROM consumed_events WHERE consumer = $1 AND event_id = $2`, c.cfg.Name, id).Scan(&n)
	return n > 0, err
}

// park keeps the event with its error, alerts and terminates the message
// so the server stops redelivering it. When even that cannot be written,
// the message is left to come back later.
func (c *Consumer) park(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, env *events.Envelope, cause error) {
	var id, typ *string
	if env != nil {
		id, typ = &env.ID, &env.Type
	}
	var fresh bool
	err := c.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO parked_events
			(consumer, stream, stream_seq, nats_subject, event_id, type, body, error, deliveries, parked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (consumer, stream, stream_seq) DO NOTHING`,
			c.cfg.Name, meta.Stream, int64(meta.Sequence.Stream), msg.Subject(), id, typ, msg.Data(),
			truncate(cause.Error(), 2000), int(meta.NumDelivered), tx.Now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		fresh = n > 0
		return err
	})
	if err != nil {
		// Unacknowledged, it comes back after the back-off.
		c.logger.Error("events: cannot park event; it will be redelivered", "stream_seq", meta.Sequence.Stream, "err", err.Error())
		return
	}
	if fresh {
		attrs := []any{"alert", true, "stream_seq", meta.Sequence.Stream, "deliveries", meta.NumDelivered, "err", cause.Error()}
		if env != nil {
			attrs = append(attrs, "event_id", env.ID, "type", env.Type)
		}
		c.logger.Error("events: event parked; continuing with the next", attrs...)
	}
	if err := msg.Term(); err != nil {
		c.logger.Warn("events: could not stop redelivery of a parked event", "stream_seq", meta.Sequence.Stream, "err", err.Error())
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
