package observe

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Upstreams wraps base so every call through it is timed by upstream (the
// configured host:port, a handful per gateway) and status class:
// platform_upstream_request_duration_seconds. A nil *Metrics returns base.
func (m *Metrics) Upstreams(base http.RoundTripper) http.RoundTripper {
	if m == nil {
		return base
	}
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "platform_upstream_request_duration_seconds",
		Help:    "Time until an upstream's response headers, by upstream and status class (\"error\" when none came).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"upstream", "code"})
	m.labelled.MustRegister(h)
	return upstreamTimer{base: base, h: h}
}

type upstreamTimer struct {
	base http.RoundTripper
	h    *prometheus.HistogramVec
}

func (u upstreamTimer) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := u.base.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode/100) + "xx"
	}
	u.h.WithLabelValues(req.URL.Host, code).Observe(time.Since(start).Seconds())
	return resp, err
}
