package events

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/httpx"
)

// TraceparentHeader is the NATS message header that carries the W3C trace
// context of the request that wrote the event. It is transport metadata:
// kept in the outbox row beside the envelope, never in the envelope
// (platform.md, "transport metadata … never in the envelope").
const TraceparentHeader = "traceparent"

// Traceparent is the traceparent to keep beside an event written under
// ctx: its current span's when tracing runs, else the request's trace as
// httpx logs it, else "" (a write no request caused).
func Traceparent(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	}
	if t, ok := httpx.TraceIn(ctx); ok {
		return t.Traceparent()
	}
	return ""
}

// OutboxTraceparent is the value of an outbox row's traceparent column
// for an event written under ctx: Traceparent, or nil (SQL NULL) when
// there is none. The publisher sends it as the message's header.
func OutboxTraceparent(ctx context.Context) *string {
	if tp := Traceparent(ctx); tp != "" {
		return &tp
	}
	return nil
}

// HeaderCarrier reads and writes trace context in a NATS message's
// headers, for OpenTelemetry's propagators. NATS keeps header names as
// given, so it uses the lower-case names the propagators use.
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Get implements propagation.TextMapCarrier.
func (c HeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set implements propagation.TextMapCarrier.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys implements propagation.TextMapCarrier.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
