package couriercmd

import (
	"context"
	"errors"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/observe"
)

// observed is courier's metrics seam, built once per process (the loops
// may open more than once while the database is away): sends by outcome,
// webhook deliveries by outcome, the outbox's publish counts. Its zero
// value (no metrics) leaves everything as it is.
type observed struct {
	sends, deliveries *observe.Outcomes
	outboxCounted     func(published, failed, parked int)
}

func newObserved(m *observe.Metrics) observed {
	if m == nil {
		return observed{}
	}
	return observed{
		sends: observe.NewOutcomes(m.Counter("platform_courier_sends_total",
			"Emails handed to the mail system, by outcome: sent, failed (retried) or rejected (permanently).", "outcome"),
			"sent", "failed", "rejected"),
		deliveries: observe.NewOutcomes(m.Counter("platform_courier_webhook_deliveries_total",
			"Webhook delivery attempts by outcome: delivered, retrying (failed, another attempt scheduled) or failed (given up).", "outcome"),
			"delivered", "retrying", "failed"),
		outboxCounted: m.OutboxPublished(),
	}
}

func (o observed) mailer(m courier.Mailer) courier.Mailer {
	if o.sends == nil {
		return m
	}
	return countedMailer{Mailer: m, sends: o.sends}
}

func (o observed) webhookStore(s courier.WebhookStore) courier.WebhookStore {
	if o.deliveries == nil {
		return s
	}
	return countedDeliveries{WebhookStore: s, deliveries: o.deliveries}
}

type countedMailer struct {
	courier.Mailer
	sends *observe.Outcomes
}

func (c countedMailer) Deliver(ctx context.Context, m courier.Message) error {
	err := c.Mailer.Deliver(ctx, m)
	var de *courier.DeliveryError
	switch {
	case err == nil:
		c.sends.Inc("sent")
	case errors.As(err, &de) && de.Permanent:
		c.sends.Inc("rejected")
	default:
		c.sends.Inc("failed")
	}
	return err
}

type countedDeliveries struct {
	courier.WebhookStore
	deliveries *observe.Outcomes
}

func (c countedDeliveries) RecordAttempts(ctx context.Context, outcomes []courier.AttemptOutcome) error {
	err := c.WebhookStore.RecordAttempts(ctx, outcomes)
	for _, o := range outcomes {
		switch {
		case o.OK:
			c.deliveries.Inc("delivered")
		case o.Next != nil:
			c.deliveries.Inc("retrying")
		default:
			c.deliveries.Inc("failed")
		}
	}
	return err
}
