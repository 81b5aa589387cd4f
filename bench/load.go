package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"fortio.org/fortio/periodic"
)

// op is one unit of work a client does, a request (or a pair of them);
// an error counts against the scenario.
type op func(ctx context.Context) error

// Level is one scenario run at one concurrency.
type Level struct {
	Concurrency int     `json:"concurrency"`
	Duration    float64 `json:"duration_s"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_ms"`
	P90         float64 `json:"p90_ms"`
	P95         float64 `json:"p95_ms"`
	P99         float64 `json:"p99_ms"`
	Max         float64 `json:"max_ms"`
	// ErrorSamples are the first distinct error messages.
	ErrorSamples []string `json:"error_samples,omitempty"`
	// Timeline is the run cut into 100 ms slices: requests per second
	// and the p50 and p99 latency of each slice.
	Timeline []Slice `json:"timeline,omitempty"`
}

// Slice is one point of a latency-over-time plot.
type Slice struct {
	T   float64 `json:"t_s"`
	RPS float64 `json:"rps"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// recorder is a fortio access logger that keeps every call's start and
// latency per client thread (no lock on the hot path), so percentiles are
// exact rather than bucketed, and the timeline can be drawn.
type recorder struct {
	start   time.Time
	samples [][]sample
	mu      sync.Mutex
	errs    map[string]int
}

type sample struct {
	at      float32 // seconds since start
	latency float32 // seconds
}

func newRecorder(threads int) *recorder {
	r := &recorder{samples: make([][]sample, threads), errs: map[string]int{}}
	for i := range r.samples {
		r.samples[i] = make([]sample, 0, 4096)
	}
	return r
}

func (r *recorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

func (r *recorder) Report(_ context.Context, id periodic.ThreadID, _ int64, at time.Time, latency float64, _ bool, _ string) {
	r.samples[id] = append(r.samples[id], sample{at: float32(at.Sub(r.start).Seconds()), latency: float32(latency)})
}

func (r *recorder) Info() string { return "bench recorder" }

func (r *recorder) fail(err error) {
	r.mu.Lock()
	r.errs[err.Error()]++
	r.mu.Unlock()
}

// runner adapts an op to fortio's Runnable.
type runner struct {
	op  op
	rec *recorder
}

func (r runner) Run(ctx context.Context, _ periodic.ThreadID) (bool, string) {
	if err := r.op(ctx); err != nil {
		r.rec.fail(err)
		return false, ""
	}
	return true, ""
}

// closedLoop runs ops (one per client; ops[i] is client i's) closed-loop,
// each client starting its next call as soon as the last one returns, for
// d. rate > 0 makes it open-loop at rate calls per second overall instead
// (the soak). fortio's periodic runner drives the clients: QPS -1 is its
// "as fast as possible" mode with NumThreads goroutines.
func closedLoop(ops []op, d time.Duration, rate float64) Level {
	return summarize(loop(ops, d, rate))
}

// stretch is one measured stretch: every call's sample, and its length.
type stretch struct {
	rec     *recorder
	seconds float64
}

func loop(ops []op, d time.Duration, rate float64) stretch {
	n := len(ops)
	rec := newRecorder(n)
	opts := periodic.RunnerOptions{
		RunType:      "bench",
		QPS:          -1,
		Duration:     d,
		NumThreads:   n,
		Percentiles:  []float64{50, 90, 99},
		Resolution:   0.00001,
		Out:          io.Discard,
		AccessLogger: rec,
	}
	if rate > 0 {
		opts.QPS = rate
		opts.Uniform = true
	}
	// The runner takes the options over (and clears the caller's copy of
	// Runners), so the clients are installed on its own copy.
	pr := periodic.NewPeriodicRunner(&opts)
	for i, o := range ops {
		pr.Options().Runners[i] = runner{op: o, rec: rec}
	}
	rec.start = time.Now()
	res := pr.Run()
	return stretch{rec: rec, seconds: res.ActualDuration.Seconds()}
}

// summarize merges runs of the same clients (alternating stretches of one
// measurement) into one level, the stretches laid end to end.
func summarize(runs ...stretch) Level {
	var errors int64
	errs := map[string]int{}
	var all []sample
	seconds, clients := 0.0, 0
	for _, r := range runs {
		for m, c := range r.rec.errs {
			errors += int64(c)
			errs[m] += c
		}
		for _, s := range r.rec.samples {
			for _, x := range s {
				x.at += float32(seconds)
				all = append(all, x)
			}
		}
		seconds += r.seconds
		clients = len(r.rec.samples)
	}
	lv := Level{Concurrency: clients, Duration: seconds, Requests: int64(len(all)), Errors: errors}
	if seconds > 0 {
		lv.RPS = float64(len(all)) / seconds
	}
	lat := make([]float64, len(all))
	for i, s := range all {
		lat[i] = float64(s.latency) * 1000
	}
	slices.Sort(lat)
	lv.P50, lv.P90, lv.P95, lv.P99 = percentile(lat, 50), percentile(lat, 90), percentile(lat, 95), percentile(lat, 99)
	if len(lat) > 0 {
		lv.Max = lat[len(lat)-1]
	}
	msgs := make([]string, 0, len(errs))
	for m, c := range errs {
		msgs = append(msgs, fmt.Sprintf("%d× %s", c, m))
	}
	sort.Strings(msgs)
	if len(msgs) > 5 {
		msgs = msgs[:5]
	}
	lv.ErrorSamples = msgs
	lv.Timeline = timeline(all, seconds)
	return lv
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func timeline(all []sample, seconds float64) []Slice {
	const step = 0.1
	n := int(math.Ceil(seconds / step))
	if n <= 0 || len(all) == 0 {
		return nil
	}
	buckets := make([][]float64, n)
	for _, s := range all {
		i := int(float64(s.at) / step)
		if i >= n {
			i = n - 1
		}
		if i < 0 {
			i = 0
		}
		buckets[i] = append(buckets[i], float64(s.latency)*1000)
	}
	out := make([]Slice, 0, n)
	for i, b := range buckets {
		slices.Sort(b)
		out = append(out, Slice{T: float64(i) * step, RPS: float64(len(b)) / step, P50: percentile(b, 50), P99: percentile(b, 99)})
	}
	return out
}

// plainLoop measures a non-HTTP baseline with the same clients-and-duration
// shape: n goroutines calling f until d passes; it returns calls per second.
func plainLoop(n int, d time.Duration, f func(worker int) error) (float64, int64) {
	var wg sync.WaitGroup
	counts := make([]int64, n)
	errs := make([]int64, n)
	start := time.Now()
	deadline := start.Add(d)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := f(w); err != nil {
					errs[w]++
					continue
				}
				counts[w]++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var total, failed int64
	for i := range counts {
		total += counts[i]
		failed += errs[i]
	}
	return float64(total) / elapsed, failed
}
