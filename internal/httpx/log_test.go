package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestNewLogger(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	reqCtx := WithTrace(context.Background(), Trace{TraceID: traceID, SpanID: "00f067aa0ba902b7", Flags: "01"})
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]any
		none []string
	}{
		{"ServiceAndTraceFromContext", func(l *slog.Logger) { l.InfoContext(reqCtx, "hello") },
			map[string]any{"service": "box", "trace_id": traceID, "msg": "hello", "level": "INFO"}, nil},
		{"NoTraceWithoutRequest", func(l *slog.Logger) { l.Info("started") },
			map[string]any{"service": "box"}, []string{"trace_id"}},
		{"ErrorKeyIsErr", func(l *slog.Logger) { l.WarnContext(reqCtx, "failed", "error", errors.New("boom")) }, //nolint:sloglint // the rename is what this case tests
			map[string]any{"err": "boom", "trace_id": traceID}, []string{"error"}},
		{"ErrorKeyInWithIsErr", func(l *slog.Logger) { l.With("error", "boom").WarnContext(reqCtx, "failed") }, //nolint:sloglint // the rename is what this case tests
			map[string]any{"err": "boom", "level": "WARN"}, []string{"error"}},
		{"RequestLine", func(l *slog.Logger) {
			logRequest(reqCtx, l, "GET", "/v1/me", 200, 12, 1500*time.Microsecond, "00f067aa0ba902b7")
		},
			map[string]any{"msg": "request", "method": "GET", "path": "/v1/me", "status": 200.0, "bytes": 12.0, "duration_ms": 1.5,
				"span_id": "00f067aa0ba902b7", "trace_id": traceID, "service": "box", "level": "INFO"}, []string{"source"}},
		{"TraceByHandOnce", func(l *slog.Logger) { l.InfoContext(reqCtx, "x", "trace_id", traceID) },
			map[string]any{"trace_id": traceID}, nil},
		{"WithAttrsKeepsTrace", func(l *slog.Logger) { l.With("call", "me").InfoContext(reqCtx, "x") },
			map[string]any{"call": "me", "trace_id": traceID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(NewLogger(&buf, "box", slog.LevelInfo))
			line := buf.String()
			if n := strings.Count(line, `"trace_id"`); n > 1 {
				t.Errorf("trace_id appears %d times: %s", n, line)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("not one JSON line: %q", line)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (%s)", k, got[k], v, line)
				}
			}
			for _, k := range tt.none {
				if _, ok := got[k]; ok {
					t.Errorf("unexpected key %s: %s", k, line)
				}
			}
		})
	}
}

// Keys inside a group are the caller's: only a top-level "error" is renamed.
func TestNewLoggerGroupKeepsKeys(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, "box", slog.LevelInfo).WithGroup("upstream").Info("x", "error", "kept") //nolint:sloglint // the key is what this test checks
	var got struct {
		Upstream map[string]any `json:"upstream"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if got.Upstream["error"] != "kept" {
		t.Errorf("upstream = %v, want its error key kept: %s", got.Upstream, buf.String())
	}
}

// BenchmarkRequestLine is the line Observe logs for every request, through
// NewLogger, with the request's trace in the context: what logging costs
// a request before the write itself.
func BenchmarkRequestLine(b *testing.B) {
	ctx := WithTrace(context.Background(), Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Flags: "01"})
	l := NewLogger(io.Discard, "identity", slog.LevelInfo)
	b.ReportAllocs()
	for b.Loop() {
		logRequest(ctx, l, "GET", "/v1/accounts/0193b5a0-7c1e-7d3a-9f00-3a4b5c6d7e8f", 200, 312, 1234*time.Microsecond, "00f067aa0ba902b7")
	}
}
