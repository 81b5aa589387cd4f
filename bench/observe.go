package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// observed: the authenticated read (GET /v1/accounts/{id}) on a second
// identity instance over the same database with tracing on, exporting
// OTLP/HTTP to a receiver in the harness, and METRICS_ADDR set, scraped
// every second, against the plain instance in the same run, interleaved
// round by round (deploy.md §2: the overhead is a few percent at most).
func (b *bench) observed(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "observe", Title: "observability overhead: the authenticated read with tracing and metrics on",
		Unit: "req/s", BaselineName: "the same read on an identity instance with neither"}
	recv, err := startOTLPReceiver()
	if err != nil {
		return nil, err
	}
	defer recv.close()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for k, v := range b.p.identityEnv {
		env[k] = v
	}
	metricsAddr := "127.0.0.1:" + strconv.Itoa(metricsPort)
	env["PORT"] = strconv.Itoa(port)
	env["METRICS_ADDR"] = metricsAddr
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.url
	if b.cfg.pprofBase > 0 {
		// After identity's, box's and the gateway's.
		env["DEBUG_ADDR"] = "127.0.0.1:" + strconv.Itoa(b.cfg.pprofBase+3)
	}
	traced, err := startService(ctx, "identity-observed", port, filepath.Join(b.dir, "identity-observed.log"), b.p.bin, env, "identity", "serve")
	if err != nil {
		return nil, err
	}
	defer traced.stop()

	scrapeCtx, stopScrapes := context.WithCancel(ctx)
	var scrapes, scrapeFailures atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { scrapeEverySecond(scrapeCtx, "http://"+metricsAddr+"/metrics", &scrapes, &scrapeFailures) })

	var plain, observed perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.readOp(traced.URL)))
		if err != nil {
			stopScrapes()
			wg.Wait()
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		plain, observed = append(plain, byRound[0]), append(observed, byRound[1])
	}
	stopScrapes()
	wg.Wait()
	throughput := peakRatio(observed, plain)
	s.Ratio = throughput.median()
	s.medianTarget("≥ 90% of the plain instance's throughput (peak over levels)", throughput, pct, func(r float64) bool { return r >= 0.9 })
	exports, bytes := recv.requests.Load(), recv.bytes.Load()
	s.target("spans exported to the receiver", fmt.Sprintf("%d exports, %.1f MiB", exports, mib(bytes)), exports > 0)
	s.target("metrics scraped every second", fmt.Sprintf("%d scrapes, %d failed", scrapes.Load(), scrapeFailures.Load()),
		scrapes.Load() > 0 && scrapeFailures.Load() == 0)
	s.errorsTarget()
	return s, nil
}

// otlpReceiver accepts OTLP/HTTP exports and discards them, counting what
// arrived: the collector's cost is not the service's.
type otlpReceiver struct {
	url             string
	srv             *http.Server
	requests, bytes atomic.Int64
}

func startOTLPReceiver() (*otlpReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &otlpReceiver{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		n, _ := io.Copy(io.Discard, req.Body)
		r.requests.Add(1)
		r.bytes.Add(n)
		// An empty ExportTraceServiceResponse: everything accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *otlpReceiver) close() { _ = r.srv.Close() }

// scrapeEverySecond reads url each second until ctx ends, as Prometheus
// would, reading the whole body.
func scrapeEverySecond(ctx context.Context, url string, ok, failed *atomic.Int64) {
	c := &http.Client{Timeout: 5 * time.Second}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := c.Get(url)
		if err != nil {
			if ctx.Err() == nil {
				failed.Add(1)
			}
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed.Add(1)
			continue
		}
		ok.Add(1)
	}
}
