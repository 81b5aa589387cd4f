package observe

import (
	"context"
	"io"
	"log/slog"
	"slices"

	"github.com/platformco/platform/internal/httpx"
)

// NewLogger returns the platform's JSON logger for service. Every line
// names the service, and a line logged with a request's context (the
// …Context methods, LogAttrs) carries its trace_id, so no call site adds
// either by hand. One vocabulary of keys: an error is "err", never
// "error" (an "error" key outside any group is written as "err").
func NewLogger(w io.Writer, service string, level slog.Leveler) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(traceHandler{Handler: h.WithAttrs([]slog.Attr{slog.String("service", service)})})
}

// traceHandler adds the trace id of the record's context and renames
// "error" to "err". The rename is here, not in the JSON handler's
// ReplaceAttr: with a ReplaceAttr the handler passes every attribute of
// every line through it and writes each line's level through
// encoding/json (BenchmarkRequestLine).
type traceHandler struct {
	slog.Handler
	// grouped: a WithGroup put what follows in a group, where keys are
	// the caller's own.
	grouped bool
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	hasTrace, rename := false, false
	r.Attrs(func(a slog.Attr) bool {
		hasTrace = hasTrace || a.Key == "trace_id" // a call site that still adds it by hand
		rename = rename || !h.grouped && a.Key == "error"
		return true
	})
	if rename {
		r = errRenamed(r)
	}
	if t, ok := httpx.TraceIn(ctx); ok && !hasTrace {
		r.AddAttrs(slog.String("trace_id", t.TraceID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if !h.grouped && slices.ContainsFunc(as, func(a slog.Attr) bool { return a.Key == "error" }) {
		as = slices.Clone(as)
		for i := range as {
			if as[i].Key == "error" {
				as[i].Key = "err"
			}
		}
	}
	return traceHandler{Handler: h.Handler.WithAttrs(as), grouped: h.grouped}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{Handler: h.Handler.WithGroup(name), grouped: h.grouped || name != ""}
}

// errRenamed is r with its "error" attributes under "err".
func errRenamed(r slog.Record) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" {
			a.Key = "err"
		}
		out.AddAttrs(a)
		return true
	})
	return out
}
