package identitycmd

import (
	"context"
	"log/slog"

	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
)

// startPublisher runs the outbox publisher inside identity serve, so the
// events identity records are delivered to NATS JetStream at EVENTS_URL.
func startPublisher(ctx context.Context, db *sqldb.DB, eventsURL string, metrics *observe.Metrics, logger *slog.Logger) (stop func(), err error) {
	return outbox.Start(ctx, db, eventsURL, outbox.Options{Service: "identity", Counted: metrics.OutboxPublished()}, logger)
}
