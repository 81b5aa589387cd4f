// Package accountdeleted is box's consumer of identity.account.deleted
// (operations.md section 8): per event, in one transaction with the
// consumer library's record of the envelope id (so a redelivery changes
// nothing), box revokes the account's active entitlements, each with an
// audit row whose actor is the deleting user, and voids its outstanding
// capabilities.
package accountdeleted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

// Type is the event type consumed.
const Type = "identity.account.deleted"

// ConsumerName is the durable consumer's name on the stream and in
// consumed_events.
const ConsumerName = "box-account-deleted"

// payload is identity.account.deleted's data. deleted_by came as an
// optional field (a patch release); fields added later are ignored, as
// platform.md's versioning rules ask of consumers.
type payload struct {
	AccountID string  `json:"account_id"`
	DeletedBy *string `json:"deleted_by"`
}

// Handler applies one identity.account.deleted event through store. An
// event whose payload cannot be read is permanent: retrying cannot mend
// it, so it is parked. Without deleted_by (events published before the
// field existed) the actor is the publishing service, the envelope's
// source, as no user is named.
func Handler(store *sqlstore.Store, logger *slog.Logger) consumer.Handler {
	return consumer.Each(func(ctx context.Context, tx *sqldb.Tx, e events.Envelope) error {
		if e.Type != Type {
			return consumer.Permanent(fmt.Errorf("%s: not an %s event", e.Type, Type))
		}
		var p payload
		if err := json.NewDecoder(bytes.NewReader(e.Data)).Decode(&p); err != nil {
			return consumer.Permanent(fmt.Errorf("%s data: %w", Type, err))
		}
		if !ids.Valid(p.AccountID) {
			return consumer.Permanent(fmt.Errorf("%s data: account_id must be a bare lower-case UUID, got %q", Type, p.AccountID))
		}
		if p.AccountID != e.Subject {
			return consumer.Permanent(fmt.Errorf("%s: data.account_id %s is not the subject %s", Type, p.AccountID, e.Subject))
		}
		actor := e.Source
		if p.DeletedBy != nil {
			if !ids.Valid(*p.DeletedBy) {
				return consumer.Permanent(fmt.Errorf("%s data: deleted_by must be a bare lower-case UUID, got %q", Type, *p.DeletedBy))
			}
			actor = *p.DeletedBy
		}
		del, err := store.RevokeAccount(ctx, tx, p.AccountID, actor)
		if err != nil {
			return err
		}
		// Told once it is so: a batch that rolls back is applied again.
		tx.AfterCommit(func() {
			logger.InfoContext(ctx, "box: deleted account's entitlements revoked", "event_id", e.ID, "account_id", p.AccountID,
				"actor", actor, "revoked", len(del.Revoked), "capabilities_voided", del.Voided)
		})
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
}

// errUnmigrated is a database without the consumer library's tables.
var errUnmigrated = errors.New("event consumer tables are missing: run `platform box migrate`")

// checkTables fails when the consumer tables are missing or the database
// cannot say.
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
// stops it. It fails at once only on a malformed URL or a database that
// answers without the consumer tables (run `platform box migrate`); a
// database or broker that is unreachable is waited for, retried every few
// seconds, so box serves meanwhile and deletions, kept in the stream, are
// applied once both answer.
func Start(ctx context.Context, db *sqldb.DB, store *sqlstore.Store, cfg Config, logger *slog.Logger) (stop func(), err error) {
	if err := checkTables(ctx, db); errors.Is(err, errUnmigrated) {
		return nil, err
	}
	nc, err := events.Connect(cfg.EventsURL, "platform-box-"+ConsumerName, logger)
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
				c, err = consumer.New(setup, db, js, ccfg, Handler(store, logger), logger)
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
			logger.Warn("events: cannot set up the consumer; retrying (deletions wait in the stream)", "err", err.Error())
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
