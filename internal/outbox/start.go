package outbox

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// Start runs a Publisher for db's outbox in the background, against the
// NATS server(s) at eventsURL, and returns a function that stops it: stop
// lets the batches in hand finish (their acknowledgements awaited at most
// AckTimeout, then marked), then closes the connection. It fails only on a
// malformed URL; an unreachable broker is waited for (see events.Connect).
// It is what `identity serve` runs when EVENTS_URL is set, and what
// `platform events publish` runs standalone.
func Start(ctx context.Context, db *sqldb.DB, eventsURL string, opts Options, logger *slog.Logger) (stop func(), err error) {
	opts = opts.withDefaults()
	nc, err := events.Connect(eventsURL, "platform-outbox-"+opts.Service, logger)
	if err != nil {
		return nil, err
	}
	js, err := NewJetStream(nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := NewPublisher(db, js, opts, logger)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(runCtx)
	}()
	logger.Info("outbox: publisher started", "stream", opts.Stream.Name, "service", opts.Service)
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			nc.Close()
			logger.Info("outbox: publisher stopped")
		})
	}, nil
}

// Row is one outbox row as stored.
type Row struct {
	Seq         int64
	Envelope    events.Envelope
	CreatedAt   time.Time
	PublishedAt *time.Time
	Attempts    int
	NextAttempt time.Time
	LastError   string
	ParkedAt    *time.Time
	// Traceparent is the writing request's trace context, sent as the
	// message's traceparent header; empty when none.
	Traceparent string
}

// List returns the outbox rows after seq afterSeq, in creation order, with
// their envelopes as the publisher builds them: what contract tests and
// operators read.
func List(ctx context.Context, db *sqldb.DB, afterSeq int64) ([]Row, error) {
	q, err := db.Query(ctx, `SELECT seq, id, type, source, subject, time, data, created_at,
			published_at, attempts, next_attempt_at, last_error, parked_at, traceparent
		FROM outbox WHERE seq > $1 ORDER BY seq`, afterSeq)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var rows []Row
	for q.Next() {
		var r Row
		var data []byte
		var published, parked sql.NullTime
		var lastError, traceparent *string
		err := q.Scan(&r.Seq, &r.Envelope.ID, &r.Envelope.Type, &r.Envelope.Source, &r.Envelope.Subject,
			&r.Envelope.Time, &data, &r.CreatedAt, &published, &r.Attempts, &r.NextAttempt, &lastError, &parked, &traceparent)
		if err != nil {
			return nil, err
		}
		r.Envelope.SpecVersion = events.SpecVersion
		r.Envelope.Time = r.Envelope.Time.UTC()
		r.Envelope.Data = data
		r.PublishedAt, r.ParkedAt = timePtr(published), timePtr(parked)
		if lastError != nil {
			r.LastError = *lastError
		}
		if traceparent != nil {
			r.Traceparent = *traceparent
		}
		rows = append(rows, r)
	}
	return rows, q.Err()
}

func timePtr(n sql.NullTime) *time.Time {
	if !n.Valid {
		return nil
	}
	t := n.Time.UTC()
	return &t
}

// NewJetStream is the JetStream client a publisher with opts needs on nc:
// every row of the batches in flight may be awaiting its acknowledgement at
// once, and past the client's window PublishMsgAsync would stall and fail
// rows.
func NewJetStream(nc *nats.Conn, opts Options) (jetstream.JetStream, error) {
	opts = opts.withDefaults()
	return jetstream.New(nc, jetstream.WithPublishAsyncTimeout(opts.AckTimeout),
		jetstream.WithPublishAsyncMaxPending(opts.InFlight*opts.BatchSize))
}
