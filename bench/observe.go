package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// observed: the authenticated read (GET /v1/accounts/{id}) on a second
// identity instance over the same database with tracing on, exporting
// OTLP/HTTP to a receiver in the harness, and METRICS_ADDR set, scraped
// every second, and on a third with METRICS_ADDR alone, against the plain
// instance in the same run, interleaved round by round. Metrics alone are
// judged (≥ 97% of the plain instance); traces with every request
// sampled are reported (decision 0015).
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
	// A third instance with metrics alone: the cost every deployment pays.
	meteredPort, err := freePort()
	if err != nil {
		return nil, err
	}
	meteredMetrics, err := freePort()
	if err != nil {
		return nil, err
	}
	meteredEnv := map[string]string{}
	for k, v := range b.p.identityEnv {
		meteredEnv[k] = v
	}
	meteredEnv["PORT"] = strconv.Itoa(meteredPort)
	meteredEnv["METRICS_ADDR"] = "127.0.0.1:" + strconv.Itoa(meteredMetrics)
	metered, err := startService(ctx, "identity-metered", meteredPort, filepath.Join(b.dir, "identity-metered.log"), b.p.bin, meteredEnv, "identity", "serve")
	if err != nil {
		return nil, err
	}
	defer metered.stop()

	scrapeCtx, stopScrapes := context.WithCancel(ctx)
	var scrapes, scrapeFailures atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { scrapeEverySecond(scrapeCtx, "http://"+metricsAddr+"/metrics", &scrapes, &scrapeFailures) })

	var plain, observed, meteredOnly perRound
	var plainCPU, observedCPU time.Duration
	var plainReads, observedReads int64
	for _, c := range b.cfg.levels {
		cpu0, cpu1 := processCPU(b.p.identity.pid()), processCPU(traced.pid())
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.readOp(traced.URL)), clients(c, b.readOp(metered.URL)))
		if err != nil {
			stopScrapes()
			wg.Wait()
			return nil, err
		}
		plainCPU += processCPU(b.p.identity.pid()) - cpu0
		observedCPU += processCPU(traced.pid()) - cpu1
		plainReads, observedReads = plainReads+total[0].Requests, observedReads+total[1].Requests
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		plain, observed, meteredOnly = append(plain, byRound[0]), append(observed, byRound[1]), append(meteredOnly, byRound[2])
	}
	if plainReads > 0 && observedReads > 0 && plainCPU > 0 {
		// On a shared machine the CPU a read costs each process is
		// steadier than their throughput. The warm-up's reads are in the
		// CPU, not in the count, alike for both.
		p, o := plainCPU/time.Duration(plainReads), observedCPU/time.Duration(observedReads)
		s.Notes = append(s.Notes, fmt.Sprintf("CPU per measured read: plain %s, observed %s (plain/observed %.1f%%)",
			p.Round(100*time.Nanosecond), o.Round(100*time.Nanosecond), 100*float64(p)/float64(o)))
	}
	stopScrapes()
	wg.Wait()
	// Every read the instance served (the warm-up's too), by its own
	// counter; then stopping it flushes the spans its exporter still
	// holds, so the receiver's count is complete.
	served, servedErr := readsServed("http://" + metricsAddr + "/metrics")
	traced.stop()
	s.medianTarget("metrics alone ≥ 97% of the plain instance's throughput (peak over levels)", peakRatio(meteredOnly, plain), pct, func(r float64) bool { return r >= 0.97 })
	throughput := peakRatio(observed, plain)
	s.Ratio = throughput.median()
	// Every request sampled costs a span's creation and export per read,
	// which on two shared cores is CPU taken from the read itself:
	// reported, not judged (decision 0015, docs/decisions).
	s.medianFigure("traces on, every request sampled (decision 0015), with metrics: throughput over the plain instance's (peak over levels)", throughput, pct)
	exports, bytes, spans := recv.requests.Load(), recv.bytes.Load(), recv.spans.Load()
	// Every read is a server span and a statement group's span; the
	// probes only add to the count. Fewer means the exporter dropped
	// spans, which would flatter the ratio.
	if servedErr != nil {
		return nil, fmt.Errorf("observed identity's request counter: %w", servedErr)
	}
	s.target("every read's spans exported to the receiver",
		fmt.Sprintf("%d spans in %d exports (%.1f MiB) for %d reads served", spans, exports, mib(bytes), served), spans >= 2*served && served > 0)
	s.target("metrics scraped every second", fmt.Sprintf("%d scrapes, %d failed", scrapes.Load(), scrapeFailures.Load()),
		scrapes.Load() > 0 && scrapeFailures.Load() == 0)
	s.errorsTarget()
	return s, nil
}

// otlpReceiver accepts OTLP/HTTP exports and discards them, counting what
// arrived (exports, bytes, spans): the collector's cost is not the
// service's.
type otlpReceiver struct {
	url                    string
	srv                    *http.Server
	requests, bytes, spans atomic.Int64
}

func startOTLPReceiver() (*otlpReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &otlpReceiver{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		spans, ok := countSpans(body)
		if err != nil || !ok {
			http.Error(w, "not an ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		r.requests.Add(1)
		r.bytes.Add(int64(len(body)))
		r.spans.Add(spans)
		// An empty ExportTraceServiceResponse: everything accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *otlpReceiver) close() { _ = r.srv.Close() }

// readsServed sums the observed instance's platform_http_requests_total
// series for the read's route, from its /metrics.
func readsServed(url string) (int64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var n int64
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, "platform_http_requests_total{") || !strings.Contains(line, `route="/v1/accounts/{accountID}"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		n += int64(v)
	}
	return n, nil
}

// processCPU is the user and system time process pid has used so far,
// from /proc/PID/stat (in clock ticks, 100 a second on Linux); 0 when it
// cannot be read.
func processCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted are those after it (utime and stime are the 14th and 15th
	// of the line, the 12th and 13th after the name).
	_, rest, ok := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// countSpans counts the spans of an ExportTraceServiceRequest by walking
// its wire format (resource_spans = 1, scope_spans = 2, spans = 2), without
// decoding them.
func countSpans(b []byte) (int64, bool) {
	var n int64
	ok := eachField(b, 1, func(rs []byte) bool {
		return eachField(rs, 2, func(ss []byte) bool {
			return eachField(ss, 2, func([]byte) bool { n++; return true })
		})
	})
	return n, ok
}

// eachField calls fn with the body of every length-delimited field num of
// the message b, skipping the other fields; false when b is malformed.
func eachField(b []byte, num protowire.Number, fn func([]byte) bool) bool {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 || !fn(v) {
				return false
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return false
		}
		b = b[l:]
	}
	return true
}

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
