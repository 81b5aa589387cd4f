// Package museusage is billing's consumer of muse.tokens.consumed
// (billing.md §6): each routed completion's tokens become a usage record of
// the account under the metric "tokens", in one transaction with the
// consumer library's record of the envelope id. The envelope id is the
// usage id too, so a redelivery, or the same event reaching POST /v1/usage,
// is recorded once.
package museusage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/sqldb"
)

// Type is the event type consumed.
const Type = "muse.tokens.consumed"

// ConsumerName is the durable consumer's name on the stream and in
// consumed_events.
const ConsumerName = "billing-muse-tokens"

// Source is the usage records' source.
const Source = "muse"

// payload is the part of muse.tokens.consumed's data billing reads; the
// other fields (alias, provider, the prompt and completion split,
// estimated) and fields added later are ignored, as platform.md's
// versioning rules ask of consumers.
type payload struct {
	AccountID   *string          `json:"account_id"`
	TotalTokens *json.RawMessage `json:"total_tokens"`
}

// Usage reads e as a usage record; ok is false for a completion that used
// no tokens (nothing to record). A payload that cannot be read is
// Permanent: retrying cannot mend it.
func Usage(e events.Envelope) (u billing.UsageRecord, ok bool, err error) {
	if e.Type != Type {
		return u, false, consumer.Permanent(fmt.Errorf("%s: not a %s event", e.Type, Type))
	}
	var p payload
	if err := json.NewDecoder(bytes.NewReader(e.Data)).Decode(&p); err != nil {
		return u, false, consumer.Permanent(fmt.Errorf("%s data: %w", Type, err))
	}
	if p.TotalTokens != nil && string(*p.TotalTokens) == "0" {
		return u, false, nil
	}
	var quantity *string
	if p.TotalTokens != nil {
		q := string(*p.TotalTokens)
		quantity = &q
	}
	id, metric, at := e.ID, billing.MetricTokens, e.Time.UTC().Format(time.RFC3339Nano)
	u, err = billing.NewUsage(billing.UsageInput{ID: &id, AccountID: p.AccountID, Metric: &metric, Quantity: quantity,
		WindowStart: &at, WindowEnd: &at}, Source)
	if err != nil {
		return u, false, consumer.Permanent(fmt.Errorf("%s data: %w", Type, err))
	}
	return u, true, nil
}

// Handler records each event's tokens through the consumer's transaction;
// recorded, when set, is called after a commit that owes the processor a
// meter event or more (the relay's kick).
func Handler(logger *slog.Logger, recorded func()) consumer.Handler {
	return consumer.Each(func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
		u, ok, err := Usage(e)
		if err != nil || !ok {
			return err
		}
		got, created, err := sqlstore.RecordUsageIn(ctx, tx, u)
		if err != nil {
			return err
		}
		if !created {
			// The id was recorded by POST /v1/usage: the same usage once.
			tx.AfterCommit(func() {
				logger.InfoContext(ctx, "billing: muse usage already recorded under its id", "event_id", e.ID,
					"quantity", strconv.FormatInt(got.Quantity, 10))
			})
			return nil
		}
		if recorded != nil {
			tx.AfterCommit(recorded)
		}
		return nil
	})
}

// Config says where the consumer reads.
type Config struct {
	// EventsURL is EVENTS_URL.
	EventsURL string
	// Stream is the stream to read (default PLATFORM_EVENTS).
	Stream events.Stream
	// Backoff is the consumer library's redelivery schedule (its default
	// when empty).
	Backoff []time.Duration
	// Recorded is called after a commit that recorded usage.
	Recorded func()
}

var errUnmigrated = errors.New("event consumer tables are missing: run `platform billing migrate`")

func checkTables(ctx context.Context, db *sqldb.DB) error {
	pending, err := consumer.Pending(ctx, db)
	if err != nil {
		return fmt.Errorf("event consumer tables: %w", err)
	}
	if pending {
		return errUnmigrated
	}
	return nil
}

// Start runs the consumer in the background and returns a function that
// stops it. It fails at once only on a malformed URL or a database without
// the consumer tables; a database or broker that does not answer is
// retried every few seconds while billing serves, and the usage waits in
// the stream.
func Start(ctx context.Context, db *sqldb.DB, cfg Config, logger *slog.Logger) (stop func(), err error) {
	if err := checkTables(ctx, db); errors.Is(err, errUnmigrated) {
		return nil, err
	}
	nc, err := events.Connect(cfg.EventsURL, "platform-billing-"+ConsumerName, logger)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("EVENTS_URL: %w", err)
	}
	logger = logger.With("consumer", ConsumerName)
	ccfg := consumer.Config{Name: ConsumerName, Stream: cfg.Stream, Types: []string{Type}, Backoff: cfg.Backoff}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for runCtx.Err() == nil {
			setup, cancelSetup := context.WithTimeout(runCtx, 10*time.Second)
			err := checkTables(setup, db)
			var c *consumer.Consumer
			if err == nil {
				c, err = consumer.New(setup, db, js, ccfg, Handler(logger, cfg.Recorded), logger)
			}
			cancelSetup()
			if err == nil {
				logger.Info("events: consuming", "type", Type)
				_ = c.Run(runCtx)
				return
			}
			if runCtx.Err() != nil {
				return
			}
			logger.Warn("events: cannot set up the consumer; retrying (usage waits in the stream)", "err", err.Error())
			t := time.NewTimer(3 * time.Second)
			select {
			case <-runCtx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			nc.Close()
		})
	}, nil
}
