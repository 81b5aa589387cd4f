package consumer

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
)

const instrumentation = "github.com/platformco/platform/internal/events/consumer"

// startSpan starts the span of one event's handling, continuing the trace
// of the message's traceparent header (the publish span of the request
// that wrote it), so the handler's work, its database operations and any
// event it writes in turn belong to that trace. A message without the
// header is handled untraced: a trace of its own would start at every
// background write. Without tracing (no provider installed) the span
// records nothing.
func (c *Consumer) startSpan(ctx context.Context, msg jetstream.Msg, env events.Envelope) (context.Context, func(error)) {
	h := msg.Headers()
	if h == nil || h.Get(events.TraceparentHeader) == "" {
		return ctx, func(error) {}
	}
	ctx = propagation.TraceContext{}.Extract(ctx, events.HeaderCarrier(h))
	tp := c.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	ctx, span := tp.Tracer(instrumentation).Start(ctx, "consume "+env.Type,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.consumer.group.name", c.cfg.Name),
			attribute.String("messaging.destination.name", msg.Subject()),
			attribute.String("messaging.message.id", env.ID),
		))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
