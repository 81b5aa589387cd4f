package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// Middleware wraps a handler.
type Middleware func(http.Handler) http.Handler

// Chain applies mws to h, the first one outermost.
func Chain(h http.Handler, mws ...Middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// statusRecorder remembers what a handler wrote, for the request log and for
// panic recovery (which may only answer when nothing was sent yet).
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Observe starts the request's trace context, logs one line per request
// (method, path, status, duration, and through the logger the trace id;
// never headers, query strings or
// bodies, which may carry secrets) and turns a handler panic into a logged
// 500 written by internal.
func Observe(logger *slog.Logger, internal http.HandlerFunc) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			// A tracing middleware in front has already set the request's
			// trace context to its span's.
			trace, ok := TraceIn(r.Context())
			if !ok {
				trace = TraceFromRequest(r)
				r = r.WithContext(WithTrace(r.Context(), trace))
			}
			rec := &statusRecorder{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					logger.ErrorContext(r.Context(), "panic serving request", "panic", p, "stack", string(debug.Stack()),
						"method", r.Method, "path", r.URL.Path)
					if rec.status == 0 {
						internal(rec, r)
					}
				}
				status := rec.status
				if status == 0 {
					status = http.StatusOK
				}
				logRequest(r.Context(), logger, r.Method, r.URL.Path, status, rec.bytes, time.Since(start), trace.SpanID)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// logRequest writes the line Observe logs for every request
// (BenchmarkRequestLine).
func logRequest(ctx context.Context, logger *slog.Logger, method, path string, status, bytes int, took time.Duration, spanID string) {
	logger.LogAttrs(ctx, slog.LevelInfo, "request",
		slog.String("method", method),
		slog.String("path", path),
		slog.Int("status", status),
		slog.Int("bytes", bytes),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		slog.String("span_id", spanID),
	)
}
