package main

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}} {
		if got := percentile(v, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
}

func TestSummarizeMergesStretches(t *testing.T) {
	a := newRecorder(2)
	a.samples[0] = []sample{{at: 0.05, latency: 0.001}, {at: 0.15, latency: 0.003}}
	a.samples[1] = []sample{{at: 0.05, latency: 0.002}}
	a.errs["boom"] = 1
	b := newRecorder(2)
	b.samples[0] = []sample{{at: 0.05, latency: 0.004}}
	lv := summarize(stretch{rec: a, seconds: 0.2}, stretch{rec: b, seconds: 0.2})
	if lv.Requests != 4 || lv.Errors != 1 || lv.Concurrency != 2 {
		t.Fatalf("level %+v", lv)
	}
	if lv.RPS != 10 {
		t.Errorf("rps %v, want 10 (4 calls in 0.4 s)", lv.RPS)
	}
	if lv.P50 < 1.99 || lv.P50 > 2.01 || lv.Max < 3.99 || lv.Max > 4.01 {
		t.Errorf("p50 %v max %v, want 2 and 4 ms", lv.P50, lv.Max)
	}
	// The second stretch is laid after the first: its call falls in the
	// third 100 ms slice.
	if len(lv.Timeline) != 4 || lv.Timeline[2].RPS != 10 {
		t.Errorf("timeline %+v", lv.Timeline)
	}
}

func TestGrowthWindowsSkipsWarmup(t *testing.T) {
	s := Series{X: []float64{0, 5, 10, 15, 20, 25, 30, 35, 40}, Y: []float64{100, 50, 40, 40, 41, 40, 44, 44, 44}}
	first, last, ok := growthWindows(s, 10)
	if !ok || first != 40 || last != 44 {
		t.Errorf("first %v last %v ok %v, want 40 44 true", first, last, ok)
	}
	if _, _, ok := growthWindows(s, 30); ok {
		t.Error("three samples after warm-up should be too few")
	}
}

func TestSpreadIsAPermutation(t *testing.T) {
	for _, n := range []int{1, 7, 14, 40} {
		got := slices.Clone(spread(n))
		slices.Sort(got)
		for i := range got {
			if got[i] != i {
				t.Fatalf("spread(%d) is not a permutation: %v", n, spread(n))
			}
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--engine", "postgres", "--scenario", "read,grant", "--concurrency", "2,4", "--duration", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.engine != "postgres" || !slices.Equal(cfg.scenarios, []string{"read", "grant"}) || !slices.Equal(cfg.levels, []int{2, 4}) || cfg.duration != 2*time.Second {
		t.Errorf("config %+v", cfg)
	}
	all, err := parseFlags(nil)
	if err != nil || !slices.Equal(all.scenarios, scenarioNames) || all.rounds != 3 {
		t.Errorf("defaults %+v %v", all, err)
	}
	for _, bad := range [][]string{{"--engine", "mysql"}, {"--scenario", "nope"}, {"--concurrency", "0"}, {"--service-env", "novalue"}, {"--rounds", "0"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("memory %+v: want RSS > 0 and peak ≥ RSS", m)
	}
}

func TestRoundsMedianAndSpread(t *testing.T) {
	tests := []struct {
		name       string
		r          rounds
		wantMedian float64
		wantFigure string
	}{
		{"OddCount", rounds{0.9, 1.2, 1.0}, 1.0, "1.00× median (rounds 0.90×, 1.20×, 1.00×; spread 0.30×)"},
		{"EvenCount", rounds{1, 3}, 2, "2.00× median (rounds 1.00×, 3.00×; spread 2.00×)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.median(); got != tt.wantMedian {
				t.Errorf("median = %v, want %v", got, tt.wantMedian)
			}
			if got := tt.r.figure(times); got != tt.wantFigure {
				t.Errorf("figure = %q, want %q", got, tt.wantFigure)
			}
		})
	}
}

func TestPeakRatioTakesEachRoundsPeakOverLevels(t *testing.T) {
	// Two levels, two rounds: round 0 peaks at level 1 for num and level 0
	// for den; round 1 the other way round.
	num := perRound{{{RPS: 50}, {RPS: 80}}, {{RPS: 90}, {RPS: 40}}}
	den := perRound{{{RPS: 100}, {RPS: 60}}, {{RPS: 70}, {RPS: 100}}}
	got := peakRatio(num, den)
	want := rounds{0.9, 0.8}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("peakRatio = %v, want %v", got, want)
	}
}
