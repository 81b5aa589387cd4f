package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// Trace is the W3C trace context of one request as this service sees it:
// the caller's trace id (or a new one) and this hop's own span id.
type Trace struct {
	TraceID string
	SpanID  string
	Flags   string
}

// Traceparent is the header value to send on calls made for this request.
func (t Trace) Traceparent() string {
	return "00-" + t.TraceID + "-" + t.SpanID + "-" + t.Flags
}

// TraceparentHeader is the traceparent header's name as http.Header keeps
// it. Read and set on every request, in that form it skips Header's
// canonicalizing, which for the lower-case name means a new string each
// time.
const TraceparentHeader = "Traceparent"

type traceKey struct{}

// TraceFrom returns the request's trace context, or a fresh one when the
// context carries none.
func TraceFrom(ctx context.Context) Trace {
	if t, ok := ctx.Value(traceKey{}).(Trace); ok {
		return t
	}
	return newTrace()
}

// TraceIn returns the trace context ctx carries, if any.
func TraceIn(ctx context.Context) (Trace, bool) {
	t, ok := ctx.Value(traceKey{}).(Trace)
	return t, ok
}

// WithTrace returns ctx carrying t.
func WithTrace(ctx context.Context, t Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// ParseTraceparent reads a version-00 traceparent header. It refuses
// malformed values and the all-zero ids the specification forbids.
func ParseTraceparent(h string) (traceID, parentID, flags string, ok bool) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) != 4 || parts[0] != "00" {
		return "", "", "", false
	}
	if !isLowerHex(parts[1], 32) || !isLowerHex(parts[2], 16) || !isLowerHex(parts[3], 2) {
		return "", "", "", false
	}
	if strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return "", "", "", false
	}
	return parts[1], parts[2], parts[3], true
}

// TraceFromRequest continues the caller's trace when r carries a valid
// traceparent, and starts a new one otherwise.
func TraceFromRequest(r *http.Request) Trace {
	if id, _, flags, ok := ParseTraceparent(r.Header.Get(TraceparentHeader)); ok {
		return Trace{TraceID: id, SpanID: randomHex(8), Flags: flags}
	}
	return newTrace()
}

// newTrace starts a trace: both ids come from one read of the random
// source.
func newTrace() Trace {
	ids := randomHex(16 + 8)
	return Trace{TraceID: ids[:32], SpanID: ids[32:], Flags: "01"}
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
