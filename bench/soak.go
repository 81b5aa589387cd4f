package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakMix is one client's cycle of work: mostly reads, some through the
// gateway, artifact checks, grant + revoke pairs and an occasional login
// (each login is one argon2id hash, the costliest call).
var soakMix = []struct {
	kind  string
	count int
}{{"read", 16}, {"gateway", 10}, {"artifact", 8}, {"grant+revoke", 5}, {"login", 1}}

// soak runs the mixed load open-loop at --soak-rate for --soak, sampling
// each service's RSS every 5 s, and reports errors and the RSS growth
// after the warm-up (a quarter of the run, at most a minute).
func (b *bench) soak(ctx context.Context) (*Scenario, error) {
	d := b.cfg.soak
	s := &Scenario{Name: "soak", Title: fmt.Sprintf("soak: mixed load for %s at %.0f ops/s", d, b.cfg.soakRate), Unit: "ops/s"}
	type counter struct{ ok, failed atomic.Int64 }
	counts := map[string]*counter{}
	for _, m := range soakMix {
		counts[m.kind] = &counter{}
	}
	ops := make([]op, b.cfg.soakClients)
	for i := range ops {
		var cycle []op
		var kinds []string
		for _, m := range soakMix {
			for j := range m.count {
				client := i*100 + j
				var o op
				switch m.kind {
				case "read":
					o = b.readOp(b.p.identity.URL)(client)
				case "gateway":
					o = b.readOp(b.p.gateway.URL)(client)
				case "artifact":
					o = b.artifactOp(client)
				case "grant+revoke":
					o = b.pairOp(client)
				case "login":
					o = b.loginOp(client)
				}
				cycle, kinds = append(cycle, o), append(kinds, m.kind)
			}
		}
		// Interleave the kinds so every client mixes them over time.
		order := spread(len(cycle))
		next := i * 7
		ops[i] = func(ctx context.Context) error {
			k := order[next%len(order)]
			next++
			err := cycle[k](ctx)
			if err != nil {
				counts[kinds[k]].failed.Add(1)
			} else {
				counts[kinds[k]].ok.Add(1)
			}
			return err
		}
	}

	services := b.p.services()
	series := make([]Series, len(services))
	for i, sv := range services {
		series[i] = Series{Name: sv.Name + " RSS", Unit: "MiB"}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			for i, sv := range services {
				if m, err := readMemory(sv.pid()); err == nil {
					series[i].X = append(series[i].X, time.Since(start).Seconds())
					series[i].Y = append(series[i].Y, mib(m.RSS))
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	lv := closedLoop(ops, d, b.cfg.soakRate)
	close(done)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Levels = []Level{lv}
	s.Series = series

	var kinds []string
	for k, c := range counts {
		kinds = append(kinds, fmt.Sprintf("%s %d ok / %d failed", k, c.ok.Load(), c.failed.Load()))
	}
	sort.Strings(kinds)
	s.Notes = append(s.Notes, "operations: "+strings.Join(kinds, ", "))
	s.target("zero errors", fmt.Sprint(lv.Errors), lv.Errors == 0)

	warm := min(time.Minute, d/4).Seconds()
	s.Notes = append(s.Notes, fmt.Sprintf("warm-up: the first %.0f s; growth compares the mean RSS of the last quarter of the samples after it with the first quarter's; allowed: 5%% or 3 MiB, whichever is more", warm))
	for _, ser := range series {
		first, last, ok := growthWindows(ser, warm)
		if !ok {
			s.info(ser.Name+": no growth after warm-up", "too few samples")
			continue
		}
		grow := last - first
		allowed := math.Max(3, first*0.05)
		s.target(ser.Name+": no growth after warm-up", fmt.Sprintf("%.1f → %.1f MiB (%+.1f)", first, last, grow), grow <= allowed)
	}
	return s, nil
}

// growthWindows is the mean of the first and of the last quarter of the
// samples taken after warm seconds.
func growthWindows(s Series, warm float64) (first, last float64, ok bool) {
	var ys []float64
	for i, x := range s.X {
		if x >= warm {
			ys = append(ys, s.Y[i])
		}
	}
	if len(ys) < 4 {
		return 0, 0, false
	}
	q := len(ys) / 4
	mean := func(v []float64) float64 {
		t := 0.0
		for _, x := range v {
			t += x
		}
		return t / float64(len(v))
	}
	return mean(ys[:q]), mean(ys[len(ys)-q:]), true
}

// spread is an order of 0..n-1 that scatters neighbours (a stride
// coprime with n), so each kind's calls are spread over the cycle.
func spread(n int) []int {
	stride := 7
	for gcd(stride, n) != 1 {
		stride++
	}
	out := make([]int, n)
	for i := range out {
		out[i] = (i * stride) % n
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
