package httpx

import (
	"context"
	"io"
	"log/slog"
)

// NewLogger returns the platform's JSON logger for service. Every line
// names the service, and a line logged with a request's context (the
// …Context methods, LogAttrs) carries its trace_id, so no call site adds
// either by hand. One vocabulary of keys: an error is "err", never
// "error" (an "error" key is written as "err").
func NewLogger(w io.Writer, service string, level slog.Leveler) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == "error" {
			a.Key = "err"
		}
		return a
	}})
	return slog.New(traceHandler{h.WithAttrs([]slog.Attr{slog.String("service", service)})})
}

// traceHandler adds the trace id of the record's context.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if t, ok := ctx.Value(traceKey{}).(Trace); ok {
		has := false
		r.Attrs(func(a slog.Attr) bool {
			has = a.Key == "trace_id"
			return !has
		})
		if !has { // a call site that still adds it by hand
			r.AddAttrs(slog.String("trace_id", t.TraceID))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
