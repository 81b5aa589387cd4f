package observe

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

const instrumentation = "github.com/platformco/platform/internal/observe"

// propagator is W3C trace context: the traceparent header the services
// already exchange.
var propagator = propagation.TraceContext{}

// StartTracing exports service's spans over OTLP/HTTP to endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT; the exporter reads the other standard
// OTEL_EXPORTER_OTLP_* variables itself). With endpoint empty it starts
// nothing and returns a nil *Tracing, which records nothing. It installs
// the provider as OpenTelemetry's, so the outbound transports (Transport)
// find it without each client carrying it.
//
// Sampling and batching are the SDK's, from the standard variables:
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (unset: parentbased_always_on,
// every trace a caller did not decline) and OTEL_BSP_* (unset: batches of
// 512 spans, sent at the latest every 5 s), except the queue's length:
// queue spans (Telemetry's OTEL_BSP_MAX_QUEUE_SIZE; 0 keeps the SDK's). Larger
// batches were not worth a default of our own: at the bench's 10,000
// spans a second an export's fixed cost is a fraction of a percent of a
// core, the per-span conversion and encoding being the exporter's cost.
func StartTracing(ctx context.Context, service, endpoint string, queue int) (*Tracing, func(context.Context) error, error) {
	if endpoint == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, batchOptions(queue)...),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	return NewTracing(tp), tp.Shutdown, nil
}

func batchOptions(queue int) []sdktrace.BatchSpanProcessorOption {
	if queue <= 0 {
		return nil
	}
	return []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxQueueSize(queue)}
}

// Tracing starts a service's spans.
type Tracing struct {
	tracer trace.Tracer
}

// Middleware starts a server span per request, continuing the caller's
// traceparent, named by method and route pattern once routing is done. It
// hands httpx this span's trace context, so the trace and span ids in logs
// and problem bodies are the span's. Over Metrics.Middleware (or under
// it) it joins it: one pass observes both (handler).
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return with(next, nil, t)
}

// Transport wraps base so every outbound call is a client span whose
// traceparent the callee receives. Without tracing (no provider
// installed) the span is not recording and the request goes as it was.
func Transport(base http.RoundTripper) http.RoundTripper {
	return transport{base}
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := otel.GetTracerProvider().Tracer(instrumentation).Start(req.Context(), req.Method+" "+req.URL.Host,
		trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		span.End()
		return t.base.RoundTrip(req)
	}
	defer span.End()
	req = req.Clone(ctx)
	propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	span.SetAttributes(attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Host))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}

// NewTracing starts spans with tp, for tests and harnesses that bring
// their own provider (StartTracing builds the OTLP one, whose resource
// names the service: spans carry no service attribute of their own).
func NewTracing(tp trace.TracerProvider) *Tracing {
	return &Tracing{tracer: tp.Tracer(instrumentation)}
}
