package observe

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/platformco/platform/internal/httpx"
)

// Metrics over Tracing and Tracing over Metrics are each one handler that
// counts the request and ends its span, once.
func TestMetricsAndTracingJoinInEitherOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(m *Metrics, tr *Tracing, h http.Handler) http.Handler
	}{
		{"metrics over tracing", func(m *Metrics, tr *Tracing, h http.Handler) http.Handler { return m.Middleware(tr.Middleware(h)) }},
		{"tracing over metrics", func(m *Metrics, tr *Tracing, h http.Handler) http.Handler { return tr.Middleware(m.Middleware(h)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			m := New("box")
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) })
			write := func(w http.ResponseWriter, r *http.Request, status int, code, message string) { w.WriteHeader(status) }
			h := tc.wrap(m, NewTracing(tp), httpx.Finish(mux, slog.New(slog.DiscardHandler), write))
			if _, ok := h.(*handler); !ok {
				t.Fatalf("got %T, want one joined handler", h)
			}

			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/things/6f1c", nil))

			var counted dto.Metric
			if err := m.requests.WithLabelValues("/v1/things/{id}", "GET", "4xx").Write(&counted); err != nil {
				t.Fatal(err)
			}
			if got := counted.GetCounter().GetValue(); got != 1 {
				t.Errorf("requests counted: got %v, want 1", got)
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("got %d spans, want 1", len(spans))
			}
			attrs := map[string]string{}
			for _, a := range spans[0].Attributes() {
				attrs[string(a.Key)] = a.Value.String()
			}
			want := map[string]string{"http.request.method": "GET", "http.route": "/v1/things/{id}", "http.response.status_code": "404"}
			for k, v := range want {
				if attrs[k] != v {
					t.Errorf("span attribute %s: got %q, want %q", k, attrs[k], v)
				}
			}
			if len(attrs) != len(want) {
				t.Errorf("span attributes: got %v, want %v", attrs, want)
			}
		})
	}
}

func TestSpanName(t *testing.T) {
	for _, tc := range []struct{ method, pattern, want string }{
		{"GET", "GET /v1/accounts/{id}", "GET /v1/accounts/{id}"},
		// A GET pattern serves HEAD too: the name says what came.
		{"HEAD", "GET /v1/accounts/{id}", "HEAD /v1/accounts/{id}"},
		{"POST", "/v1/things", "POST /v1/things"},
		{"GET", "", "GET unmatched"},
	} {
		if got := spanName(tc.method, route(tc.pattern)); got != tc.want {
			t.Errorf("spanName(%q, %q) = %q, want %q", tc.method, tc.pattern, got, tc.want)
		}
	}
}

func TestTraceOfReadsAsTheSpanContext(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	got := traceOf(sc)
	want := httpx.Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Flags: sc.TraceFlags().String()}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{200: "2xx", 204: "2xx", 304: "3xx", 404: "4xx", 503: "5xx", 600: "6xx"} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", status, got, want)
		}
	}
}

// StartTracing leaves sampling to the standard OTEL_TRACES_SAMPLER
// variables (unset: every trace the caller did not decline): with
// always_off no span is recorded, and httpx still gets the trace context
// for logs and problem bodies.
func TestStartTracingHonoursOTELTracesSampler(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	global := otel.GetTracerProvider()
	defer otel.SetTracerProvider(global)
	tr, stop, err := StartTracing(context.Background(), "box", "http://127.0.0.1:1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	var recording bool
	var logged httpx.Trace
	h := tr.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recording = trace.SpanFromContext(r.Context()).IsRecording()
		logged = httpx.TraceFrom(r.Context())
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if recording {
		t.Error("the request's span records under OTEL_TRACES_SAMPLER=always_off")
	}
	if len(logged.TraceID) != 32 || logged.Flags != "00" {
		t.Errorf("httpx trace context: got %+v, want a trace id, not sampled", logged)
	}
}
