package observe

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/platformco/platform/internal/httpx"
)

func TestTracingContinuesTheCallersTraceUnderTheRoutePattern(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr := NewTracing(tp)

	var logged httpx.Trace
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		logged = httpx.TraceFrom(r.Context())
		w.WriteHeader(http.StatusTeapot)
	})
	write := func(w http.ResponseWriter, r *http.Request, status int, code, message string) { w.WriteHeader(status) }
	h := tr.Middleware(httpx.Finish(mux, slog.New(slog.DiscardHandler), write))

	const traceID, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := httptest.NewRequest("GET", "/v1/things/6f1c", nil)
	req.Header.Set("traceparent", "00-"+traceID+"-"+caller+"-01")
	h.ServeHTTP(httptest.NewRecorder(), req)

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	s := spans[0]
	if got := s.Name(); got != "GET /v1/things/{id}" {
		t.Errorf("span name: got %q, want the route pattern", got)
	}
	if got := s.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("span trace id: got %s, want the caller's %s", got, traceID)
	}
	if got := s.Parent().SpanID().String(); got != caller {
		t.Errorf("span parent: got %s, want the caller's span %s", got, caller)
	}
	if logged.TraceID != traceID {
		t.Errorf("trace id httpx logs: got %s, want %s", logged.TraceID, traceID)
	}
	if got := req.Header.Get("traceparent"); got != "00-"+traceID+"-"+caller+"-01" {
		t.Errorf("the caller's request header was changed to %q", got)
	}
}

func TestNilTracingServesTheHandlerItself(t *testing.T) {
	var tr *Tracing
	called := false
	h := tr.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !called {
		t.Fatal("nil Tracing did not serve the handler")
	}
}
