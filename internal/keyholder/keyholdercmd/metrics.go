package keyholdercmd

import (
	"context"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/observe"
)

// observed is keyholder's metrics seam, built once per process: exchanges
// by outcome (ok: a credential issued; else box's refusal or the store's
// failure), pulls recorded, bytes the registry front streamed. Its zero
// value (no metrics) leaves everything as it is.
type observed struct {
	exchanges, pulls *observe.Outcomes
	streamed         prometheus.Counter
}

func newObserved(m *observe.Metrics) observed {
	if m == nil {
		return observed{}
	}
	return observed{
		exchanges: observe.NewOutcomes(m.Counter("platform_keyholder_exchanges_total",
			"Capability exchanges by outcome: ok (a pull credential issued) or the refusal's code.", "outcome"),
			"ok", keyholder.CodeNotFound, keyholder.CodeCapabilityUsed, keyholder.CodeCapabilityExpired,
			keyholder.CodeUnavailable, keyholder.CodeUnprocessable, "error"),
		pulls: observe.NewOutcomes(m.Counter("platform_keyholder_pulls_total",
			"Manifest pulls by tag recorded, by outcome.", "outcome"), "ok", "error"),
		streamed: m.Counter("platform_keyholder_bytes_streamed_total",
			"Bytes of manifests and blobs the registry front sent to pulling clients.").WithLabelValues(),
	}
}

// store counts exchanges that got as far as issuing and the pulls
// recorded.
func (o observed) store(s keyholder.Store) keyholder.Store {
	if o.exchanges == nil {
		return s
	}
	return countedStore{Store: s, o: o}
}

// box counts exchanges box refused.
func (o observed) box(b keyholder.Box) keyholder.Box {
	if o.exchanges == nil {
		return b
	}
	return countedBox{Box: b, o: o}
}

type countedStore struct {
	keyholder.Store
	o observed
}

func (c countedStore) CreateCredential(ctx context.Context, cr keyholder.Credential) (keyholder.Credential, error) {
	cr, err := c.Store.CreateCredential(ctx, cr)
	c.o.exchanges.Inc(observe.OutcomeOf(err))
	return cr, err
}

func (c countedStore) RecordPull(ctx context.Context, p keyholder.Pull) error {
	err := c.Store.RecordPull(ctx, p)
	c.o.pulls.Inc(observe.OutcomeOf(err))
	return err
}

type countedBox struct {
	keyholder.Box
	o observed
}

func (c countedBox) Redeem(ctx context.Context, capability string) (keyholder.Redemption, error) {
	red, err := c.Box.Redeem(ctx, capability)
	if err != nil {
		c.o.exchanges.Inc(observe.OutcomeOf(err))
	}
	return red, err
}

// streaming counts the bytes written on the registry front's responses
// (/v2/).
func (o observed) streaming(next http.Handler) http.Handler {
	if o.streamed == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v2/") {
			next.ServeHTTP(w, r)
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		o.streamed.Add(float64(cw.n))
	})
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
