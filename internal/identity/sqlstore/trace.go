package sqlstore

import (
	"context"

	"github.com/platformco/platform/internal/events"
)

// traceparent is the outbox row's traceparent for an event written under
// ctx (events.OutboxTraceparent): the publisher sends it as the message's
// header, so the consumer continues the writing request's trace.
func traceparent(ctx context.Context) *string { return events.OutboxTraceparent(ctx) }
