// Package consumer is the platform's event consumer: a durable JetStream
// pull consumer with explicit acknowledgements that applies each event once
// (platform.md section 6, Delivery).
//
// For every message it decodes the envelope strictly, then in one
// transaction of the consumer's own database inserts the envelope id into
// consumed_events (unique per consumer) and runs the handler. The insert
// comes first: when the id is already there, the event was applied before
// (a redelivery after a lost ack, or a publisher's retry outside the
// stream's duplicate window), so the message is acknowledged and skipped.
// When the handler fails, the transaction rolls back (the id with it) and
// the message is redelivered after a back-off; after MaxAttempts failed
// attempts, or at once for an error marked Permanent or a message that is
// not a valid envelope, the event is parked in parked_events with the
// error, an alert is logged, and the consumer continues with the next one.
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
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// Handler applies one event inside the consumer's transaction. Returning an
// error rolls the transaction back; the event is retried, or parked when
// the error is Permanent or the attempts are spent.
type Handler func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error

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
	// Batch is how many messages are fetched ahead (default 64).
	Batch int
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

// Run processes messages one at a time until ctx is done, then returns nil
// after the message in hand.
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

func (c *Consumer) drain(ctx context.Context, it jetstream.MessagesContext) {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				c.logger.Warn("events: pull interrupted; resuming", "err", err.Error())
				sleep(ctx, 200*time.Millisecond)
			}
			return
		}
		c.process(context.WithoutCancel(ctx), msg)
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

// process handles one delivery to its end: acknowledged, scheduled for
// another attempt, or parked.
func (c *Consumer) process(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		c.logger.Error("events: message without JetStream metadata", "err", err.Error())
		_ = msg.Term()
		return
	}
	deliveries := int(meta.NumDelivered)
	env, err := events.Decode(msg.Data())
	if err != nil {
		c.park(ctx, msg, meta, nil, fmt.Errorf("not a valid envelope: %w", err))
		return
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
		return
	}

	ctx, endSpan := c.startSpan(ctx, msg, env)
	err = c.applyInProgress(ctx, msg, env)
	endSpan(err)
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

// applyInProgress runs apply while telling the server, at half the first
// back-off, that the delivery is still being worked on.
func (c *Consumer) applyInProgress(ctx context.Context, msg jetstream.Msg, env events.Envelope) error {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(c.cfg.Backoff[0]/2, 5*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	return c.apply(ctx, env)
}

// apply runs the handler once per envelope id, in one transaction with the
// id's insert.
func (c *Consumer) apply(ctx context.Context, env events.Envelope) error {
	return c.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO consumed_events (consumer, event_id, type, subject, time, processed_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (consumer, event_id) DO NOTHING`,
			c.cfg.Name, env.ID, env.Type, env.Subject, sqldb.Timestamp(env.Time), tx.Now)
		if err != nil {
			return fmt.Errorf("record event id: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			c.logger.Debug("events: already applied; skipped", "event_id", env.ID)
			return nil
		}
		return c.handle(ctx, tx, env)
	})
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
