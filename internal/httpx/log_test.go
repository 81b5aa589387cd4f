package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

var requestCtx = httpx.WithTrace(context.Background(), httpx.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Flags: "01"})

// TestRequestLine: the line Observe logs for every request, through the
// platform's logger, has the request's fields and its trace.
func TestRequestLine(t *testing.T) {
	var buf bytes.Buffer
	httpx.LogRequest(requestCtx, observe.NewLogger(&buf, "box", slog.LevelInfo), "GET", "/v1/me", 200, 12, 1500*time.Microsecond, "00f067aa0ba902b7")
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	want := map[string]any{"msg": "request", "method": "GET", "path": "/v1/me", "status": 200.0, "bytes": 12.0, "duration_ms": 1.5,
		"span_id": "00f067aa0ba902b7", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "service": "box", "level": "INFO"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, got[k], v, buf.String())
		}
	}
	if _, ok := got["source"]; ok {
		t.Errorf("unexpected key source: %s", buf.String())
	}
}

// BenchmarkRequestLine is the line Observe logs for every request, through
// observe.NewLogger, with the request's trace in the context: what logging
// costs a request before the write itself.
func BenchmarkRequestLine(b *testing.B) {
	l := observe.NewLogger(io.Discard, "identity", slog.LevelInfo)
	b.ReportAllocs()
	for b.Loop() {
		httpx.LogRequest(requestCtx, l, "GET", "/v1/accounts/0193b5a0-7c1e-7d3a-9f00-3a4b5c6d7e8f", 200, 312, 1234*time.Microsecond, "00f067aa0ba902b7")
	}
}
