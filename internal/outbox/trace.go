package outbox

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/events"
)

const instrumentation = "github.com/platformco/platform/internal/outbox"

// propagator is W3C trace context, as every service speaks it.
var propagator = propagation.TraceContext{}

// traceHeader sets the message's traceparent header for a row a traced
// request wrote, and starts the row's publish span in that trace: the
// header then names the publish span, so the consumer's span is its child
// and the request's grandchild. Without tracing the span records nothing
// and the header is the stored traceparent itself.
func (p *Publisher) traceHeader(tracer trace.Tracer, r *claimedRow, h nats.Header) trace.Span {
	ctx := propagator.Extract(context.Background(), propagation.MapCarrier{events.TraceparentHeader: *r.traceparent})
	ctx, span := tracer.Start(ctx, "publish "+r.env.Type, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", p.opts.Stream.Subject(r.env.Type)),
			attribute.String("messaging.message.id", r.env.ID),
		))
	propagator.Inject(ctx, events.HeaderCarrier(h))
	if !span.IsRecording() {
		span.End()
		return nil
	}
	return span
}

// endSpans ends the batch's publish spans once its acknowledgements are
// in, each with its outcome.
func endSpans(b *batch) {
	for _, r := range b.rows {
		if r.span == nil {
			continue
		}
		if !r.acked {
			msg := "not acknowledged"
			if r.err != nil {
				msg = r.err.Error()
			}
			r.span.SetStatus(codes.Error, msg)
		}
		r.span.End()
		r.span = nil
	}
}
