package events

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
)

// Connect opens a NATS connection for publishing or consuming events. It
// does not wait for the broker: a broker that is down at start, or later,
// is retried forever in the background, and the outbox keeps the events
// meanwhile. Messages are never buffered client-side while disconnected
// (a publish then fails at once), so a message is either sent during its
// attempt or not at all, which is what lets the duplicate window cover
// every retry.
func Connect(eventsURL, name string, logger *slog.Logger) (*nats.Conn, error) {
	if err := ValidateURL(eventsURL); err != nil {
		return nil, fmt.Errorf("EVENTS_URL: %w", err)
	}
	nc, err := nats.Connect(eventsURL,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("events: disconnected from NATS", "err", err.Error())
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			logger.Info("events: connected to NATS", "url", c.ConnectedUrlRedacted())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	return nc, nil
}
