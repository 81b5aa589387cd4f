package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

func TestNewLogger(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	reqCtx := httpx.WithTrace(context.Background(), httpx.Trace{TraceID: traceID, SpanID: "00f067aa0ba902b7", Flags: "01"})
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
		{"TraceByHandOnce", func(l *slog.Logger) { l.InfoContext(reqCtx, "x", "trace_id", traceID) },
			map[string]any{"trace_id": traceID}, nil},
		{"WithAttrsKeepsTrace", func(l *slog.Logger) { l.With("call", "me").InfoContext(reqCtx, "x") },
			map[string]any{"call": "me", "trace_id": traceID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(observe.NewLogger(&buf, "box", slog.LevelInfo))
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
	observe.NewLogger(&buf, "box", slog.LevelInfo).WithGroup("upstream").Info("x", "error", "kept") //nolint:sloglint // the key is what this test checks
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
