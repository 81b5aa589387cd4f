// Package observe gives every service the same Prometheus metrics
// (deploy.md §1): RED per route pattern, requests in flight, the Go runtime
// and process collectors, build info, database pool gauges and the outbox's
// backlog, served on METRICS_ADDR, a listener of its own, never the public
// port. Every label value is bounded: a route pattern, a method from a
// fixed set, a status class; never an id, an email or a raw path.
package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one service's registry and its HTTP metrics.
type Metrics struct {
	reg      *prometheus.Registry
	labelled prometheus.Registerer
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	// series holds each route and method's request series, so a request
	// finds them with one map read instead of a label lookup per metric
	// (hashing, validating and locking its label values each time).
	series sync.Map // routeKey → *routeSeries
}

type routeKey struct{ route, method string }

// routeSeries are one route and method's series: the duration histogram's
// and, created as their first request comes, the counter of each status
// class (a class never served exports no series).
type routeSeries struct {
	duration prometheus.Observer
	requests [len(statusClasses)]atomic.Pointer[counter]
}

type counter struct{ prometheus.Counter }

// routeSeries returns route and method's series.
func (m *Metrics) routeSeries(route, method string) *routeSeries {
	k := routeKey{route, method}
	if s, ok := m.series.Load(k); ok {
		return s.(*routeSeries)
	}
	s, _ := m.series.LoadOrStore(k, &routeSeries{duration: m.duration.WithLabelValues(route, method)})
	return s.(*routeSeries)
}

// served counts a request of route and method answered with status and
// times it.
func (m *Metrics) served(route, method string, status int, took time.Duration) {
	s := m.routeSeries(route, method)
	s.duration.Observe(took.Seconds())
	c := status / 100
	if c < 0 || c >= len(s.requests) {
		m.requests.WithLabelValues(route, method, statusClass(status)).Inc()
		return
	}
	n := s.requests[c].Load()
	if n == nil {
		s.requests[c].CompareAndSwap(nil, &counter{m.requests.WithLabelValues(route, method, statusClasses[c])})
		n = s.requests[c].Load()
	}
	n.Inc()
}

// New returns service's metrics: its own registry (so several services in
// one process, as in `platform dev`, never collide) with the runtime,
// process and build-info collectors registered.
func New(service string) *Metrics {
	reg := prometheus.NewRegistry()
	r := prometheus.WrapRegistererWith(prometheus.Labels{"service": service}, reg)
	m := &Metrics{
		reg:      reg,
		labelled: r,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status class.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "platform_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "platform_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	r.MustRegister(m.requests, m.duration, m.inFlight, buildInfo())
	// The runtime and process collectors describe the process, not the
	// service: unlabelled, as every dashboard expects them.
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registerer registers a service's own collectors, labelled with its name.
func (m *Metrics) Registerer() prometheus.Registerer { return m.labelled }

// Gatherer is what /metrics serves.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func buildInfo() prometheus.Collector {
	version, revision := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "platform_build_info",
		Help:        "Always 1; the labels name the running build.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision},
	})
	g.Set(1)
	return g
}

// knownMethods bounds the method label: anything else counts as "other".
var knownMethods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions,
}

// route is the label for a request's matched pattern: the path part of
// r.Pattern (the method is a label of its own), and "unmatched" for the
// requests no route took (404s, 405s, 431s), whose raw paths are unbounded.
func route(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "" || pattern == "/" {
		return "unmatched"
	}
	return pattern
}

// Middleware counts and times every request by route pattern. It wraps the
// handler Finish returned (or a Switch of them); over Tracing.Middleware
// (or under it) it joins it: one pass observes both (handler).
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return with(next, m, nil)
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Start returns service's metrics and serves them at /metrics on addr
// (METRICS_ADDR) until ctx is done or stop is called. With addr empty it
// starts nothing and returns a nil *Metrics, which records nothing: a
// service calls its methods either way.
func Start(ctx context.Context, service, addr string, logger *slog.Logger) (m *Metrics, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	m = New(service)
	_, stop, err = m.Serve(ctx, addr, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("METRICS_ADDR: %w", err)
	}
	return m, stop, nil
}

// Serve serves /metrics on addr until ctx is done or stop is called, and
// returns the address it listens on (addr may name port 0).
func (m *Metrics) Serve(ctx context.Context, addr string, logger *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener stopped", "err", err)
		}
	}()
	logger.Info("metrics listening", "addr", ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}
