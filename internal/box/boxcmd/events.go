package boxcmd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/platformco/platform/internal/box/accountdeleted"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/sqldb"
)

// validateEventsURL checks EVENTS_URL when it is set.
func validateEventsURL(u string) error {
	if u == "" {
		return nil
	}
	if err := events.ValidateURL(u); err != nil {
		return fmt.Errorf("EVENTS_URL: %v", err)
	}
	return nil
}

// startConsumers runs, inside box serve, the consumer of the events box
// reacts to: identity.account.deleted (operations.md section 8).
func startConsumers(ctx context.Context, db *sqldb.DB, store *sqlstore.Store, eventsURL string, logger *slog.Logger) (stop func(), err error) {
	return accountdeleted.Start(ctx, db, store, accountdeleted.Config{EventsURL: eventsURL}, logger)
}

// migrateConsumers creates the consumer library's tables (consumed_events,
// parked_events) beside box's own, whether or not EVENTS_URL is set, so
// setting it later needs no second migration.
func migrateConsumers(ctx context.Context, db *sqldb.DB) (int, error) {
	return consumer.Migrate(ctx, db)
}
