package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// rounds is one figure per interleaved round. A target is judged on the
// median, so one round that a burst of noise on the shared machine fell on
// does not decide it, and the spread is printed beside it, so a reader sees
// how far to trust the median.
type rounds []float64

func (r rounds) median() float64 {
	if len(r) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(r))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// figure is the median and every round's figure, formatted by f.
func (r rounds) figure(f func(float64) string) string {
	each := make([]string, len(r))
	for i, v := range r {
		each[i] = f(v)
	}
	return fmt.Sprintf("%s median (rounds %s; spread %s)", f(r.median()), strings.Join(each, ", "), f(slices.Max(r)-slices.Min(r)))
}

// medianTarget judges the median of r with ok and prints the spread.
func (s *Scenario) medianTarget(goal string, r rounds, f func(float64) string, ok func(float64) bool) {
	if len(r) == 0 {
		s.info(goal, "not measured")
		return
	}
	s.target(goal, r.figure(f), ok(r.median()))
}

// medianFigure reports the median of r and its spread without judging
// it: a figure to read, not a target.
func (s *Scenario) medianFigure(what string, r rounds, f func(float64) string) {
	if len(r) == 0 {
		s.info(what, "not measured")
		return
	}
	s.info(what, r.figure(f))
}

func times(r float64) string { return fmt.Sprintf("%.2f×", r) }

// interleaved measures each op set in turn, --rounds times, the duration
// split between the rounds, after warming each set up; each round starts
// with a different set, so a drift over the run weighs on every set alike.
// It returns, per set, its level over all rounds and its level in each
// round.
func (b *bench) interleaved(ctx context.Context, sets ...[]op) ([]Level, [][]Level, error) {
	if b.cfg.warmup > 0 {
		for _, ops := range sets {
			loop(ops, b.cfg.warmup, 0)
		}
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	runs := make([][]stretch, len(sets))
	for r := range b.cfg.rounds {
		for k := range sets {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			i := (r + k) % len(sets)
			runs[i] = append(runs[i], loop(sets[i], d, 0))
		}
	}
	total := make([]Level, len(sets))
	byRound := make([][]Level, len(sets))
	for i, rs := range runs {
		total[i] = summarize(rs...)
		for _, st := range rs {
			byRound[i] = append(byRound[i], summarize(st))
		}
	}
	return total, byRound, ctx.Err()
}

// perRound holds, for one op set, each level's per-round levels, in the
// order of --concurrency.
type perRound [][]Level

// peakRatio is, round by round, the peak throughput over levels of num
// over that of den.
func peakRatio(num, den perRound) rounds {
	if len(num) == 0 {
		return nil
	}
	var out rounds
	for r := range num[0] {
		n, d := 0.0, 0.0
		for c := range num {
			n = max(n, num[c][r].RPS)
			d = max(d, den[c][r].RPS)
		}
		if d > 0 {
			out = append(out, n/d)
		}
	}
	return out
}

// atLevel is, round by round, f of the levels of a and b measured at
// concurrency c (levels in the order of --concurrency); nil when c was not
// measured.
func (b *bench) atLevel(c int, x, y perRound, f func(x, y Level) float64) rounds {
	i := slices.Index(b.cfg.levels, c)
	if i < 0 {
		return nil
	}
	var out rounds
	for r := range x[i] {
		out = append(out, f(x[i][r], y[i][r]))
	}
	return out
}
