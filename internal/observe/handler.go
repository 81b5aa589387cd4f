package observe

import (
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/httpx"
)

// handler is the inbound middleware of both Metrics and Tracing. Either's
// Middleware over the other's returns one handler doing both (a service
// writes metrics.Middleware(tracing.Middleware(h))), so an observed
// request pays for one response recorder, one copy of the request and
// one route slot, not one of each per middleware.
type handler struct {
	metrics *Metrics
	tracing *Tracing
	next    http.Handler
}

// with returns the handler observing next by m and t, joining next when it
// is already such a handler that lacks one of them.
func with(next http.Handler, m *Metrics, t *Tracing) http.Handler {
	if h, ok := next.(*handler); ok && (m == nil || h.metrics == nil) && (t == nil || h.tracing == nil) {
		joined := *h
		if m != nil {
			joined.metrics = m
		}
		if t != nil {
			joined.tracing = t
		}
		return &joined
	}
	return &handler{metrics: m, tracing: t, next: next}
}

// serverStart are a server span's options. Its attributes are set once
// when the request ends and the route is known: one slice per span rather
// than one at the start and a larger one at the end.
var serverStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if h.metrics != nil {
		h.metrics.inFlight.Inc()
	}
	ctx, pattern := httpx.WithRoute(r.Context())
	var span trace.Span
	if h.tracing != nil {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
		ctx, span = h.tracing.tracer.Start(ctx, r.Method, serverStart...)
		// httpx gets this span's trace context, so the trace and span
		// ids in logs and problem bodies are the span's; the caller's
		// headers stay as they came (no copy per request).
		ctx = httpx.WithTrace(ctx, traceOf(span.SpanContext()))
	}
	rec := &recorder{ResponseWriter: w}
	defer h.done(r, rec, pattern, start, span)
	h.next.ServeHTTP(rec, r.WithContext(ctx))
}

// done records the request's outcome: the RED metrics by route pattern
// and the span's name, attributes and status.
func (h *handler) done(r *http.Request, rec *recorder, pattern *string, start time.Time, span trace.Span) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	rt := route(*pattern)
	if m := h.metrics; m != nil {
		m.inFlight.Dec()
		method, ok := knownMethods[r.Method]
		if !ok {
			method = "other"
		}
		m.served(rt, method, status, time.Since(start))
	}
	if span != nil {
		span.SetName(spanName(r.Method, rt))
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", rt),
			attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(status))
		}
		span.End()
	}
}

// spanName is "METHOD route": the method that came (a GET pattern serves
// HEAD too) and the route pattern without it.
func spanName(method, rt string) string { return method + " " + rt }

// traceOf is sc as httpx carries it.
func traceOf(sc trace.SpanContext) httpx.Trace {
	return httpx.Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Flags: sc.TraceFlags().String()}
}

// statusClasses are the code label's values, so a request does not build
// its own.
var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(status int) string {
	if c := status / 100; c >= 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return strconv.Itoa(status/100) + "xx"
}
