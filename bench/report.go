package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one run: what results.json holds and report.html draws.
type Report struct {
	Started    time.Time `json:"started"`
	Engine     string    `json:"engine"`
	GoMaxProcs int       `json:"cores"`
	Duration   float64   `json:"duration_s"`
	Warmup     float64   `json:"warmup_s"`
	Rounds     int       `json:"rounds"`
	Levels     []int     `json:"concurrency"`
	// Fresh is each service's memory after start, before any request;
	// Idle after the data preparation and a rest, before any load.
	Fresh     map[string]Mem `json:"fresh_memory"`
	Idle      map[string]Mem `json:"idle_memory"`
	Scenarios []*Scenario    `json:"scenarios"`
	Memory    []Target       `json:"memory_targets"`
	AllMet    bool           `json:"all_targets_met"`
	Elapsed   float64        `json:"elapsed_s"`
}

// Mem is a service's resident memory in MiB: now, and the peak (VmHWM)
// since the scenario began (since start for the idle figure).
type Mem struct {
	RSSMiB  float64 `json:"rss_mib"`
	PeakMiB float64 `json:"peak_mib"`
	// FileMiB is the part of RSSMiB that is mapped files' pages (the
	// binary's), shown beside the verdict, which is on the whole RSS.
	FileMiB float64 `json:"rss_file_mib"`
}

// Scenario is one scenario's measurements and verdicts.
type Scenario struct {
	Name         string  `json:"name"`
	Title        string  `json:"title"`
	Unit         string  `json:"unit"`
	Levels       []Level `json:"levels"`
	BaselineName string  `json:"baseline_name,omitempty"`
	// Baseline is the HTTP baseline by level; BaselineRate a non-HTTP one
	// (hashes or messages per second).
	Baseline     []Level `json:"baseline,omitempty"`
	BaselineRate float64 `json:"baseline_rate,omitempty"`
	// Side is load that ran beside the measured one (the logins of the
	// flood).
	SideName string         `json:"side_name,omitempty"`
	Side     []Level        `json:"side,omitempty"`
	Ratio    float64        `json:"ratio_to_baseline,omitempty"`
	Targets  []Target       `json:"targets"`
	Memory   map[string]Mem `json:"memory"`
	Notes    []string       `json:"notes,omitempty"`
	// Series are extra figures a scenario draws (the soak's RSS).
	Series []Series `json:"series,omitempty"`
}

// Series is a named line of (x, y) points.
type Series struct {
	Name string    `json:"name"`
	Unit string    `json:"unit"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
}

// Target is one goal with the figure measured; Met is nil when the goal is
// not judged in this run (an engine it does not apply to).
type Target struct {
	Goal   string `json:"goal"`
	Figure string `json:"figure"`
	Met    *bool  `json:"met"`
}

func (s *Scenario) target(goal, figure string, met bool) {
	s.Targets = append(s.Targets, Target{Goal: goal, Figure: figure, Met: &met})
}

func (s *Scenario) info(goal, figure string) {
	s.Targets = append(s.Targets, Target{Goal: goal, Figure: figure})
}

func (s *Scenario) errorsTarget() {
	n := errorsOf(s.Levels)
	s.target("no error", strconv.FormatInt(n, 10), n == 0)
}

// memoryTargets judges every service: ≤ 64 MiB idle, ≤ 256 MiB at the
// peak of any scenario.
func (r *Report) memoryTargets() {
	for _, name := range []string{"identity", "box", "gateway"} {
		idle := r.Idle[name].RSSMiB
		idleMet := idle <= 64
		r.Memory = append(r.Memory, Target{Goal: name + " ≤ 64 MiB RSS idle", Figure: fmt.Sprintf("%.1f MiB (%.1f before any request; %.1f of it the binary's pages)", idle, r.Fresh[name].RSSMiB, r.Idle[name].FileMiB), Met: &idleMet})
		worst, where := 0.0, ""
		for _, s := range r.Scenarios {
			if m, ok := s.Memory[name]; ok && m.PeakMiB > worst {
				worst, where = m.PeakMiB, s.Name
			}
		}
		peakMet := worst <= 256
		r.Memory = append(r.Memory, Target{Goal: name + " ≤ 256 MiB RSS at peak", Figure: fmt.Sprintf("%.1f MiB (%s)", worst, where), Met: &peakMet})
	}
	r.AllMet = true
	check := func(ts []Target) {
		for _, t := range ts {
			if t.Met != nil && !*t.Met {
				r.AllMet = false
			}
		}
	}
	for _, s := range r.Scenarios {
		check(s.Targets)
	}
	check(r.Memory)
}

func verdict(t Target) string {
	switch {
	case t.Met == nil:
		return "n/a"
	case *t.Met:
		return "met"
	default:
		return "MISSED"
	}
}

func printScenario(w io.Writer, s *Scenario) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\n%s\n", s.Title)
	fmt.Fprintln(tw, "clients\t"+s.Unit+"\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\tbaseline\tratio\t")
	for i, l := range s.Levels {
		base, ratio := "", ""
		switch {
		case i < len(s.Baseline):
			base = fmt.Sprintf("%.0f", s.Baseline[i].RPS)
			ratio = pct(l.RPS / s.Baseline[i].RPS)
		case s.BaselineRate > 0:
			base = fmt.Sprintf("%.0f", s.BaselineRate)
			ratio = pct(l.RPS / s.BaselineRate)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t\n", l.Concurrency, l.RPS, l.P50, l.P90, l.P99, l.Max, l.Errors, base, ratio)
	}
	for _, l := range s.Side {
		fmt.Fprintf(tw, "%d (%s)\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\t\t\n", l.Concurrency, s.SideName, l.RPS, l.P50, l.P90, l.P99, l.Max, l.Errors)
	}
	tw.Flush()
	for _, l := range append(append([]Level{}, s.Levels...), s.Side...) {
		for _, e := range l.ErrorSamples {
			fmt.Fprintf(w, "  error at %d clients: %s\n", l.Concurrency, e)
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// printTable prints every target with its figure and verdict.
func (r *Report) printTable(w io.Writer) {
	fmt.Fprintf(w, "\nTargets (%s, %d cores, %gs per level in %d rounds after %gs warm-up; each judged on the median round)\n", r.Engine, r.GoMaxProcs, r.Duration, r.Rounds, r.Warmup)
	fmt.Fprint(w, r.markdown())
}

// markdown is the targets table as the README shows it.
func (r *Report) markdown() string {
	var b strings.Builder
	b.WriteString("| scenario | peak | target | measured | verdict |\n|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		peakFig := fmt.Sprintf("%.0f %s", peak(s.Levels), s.Unit)
		for i, t := range s.Targets {
			name := s.Name
			if i > 0 {
				name, peakFig = "", ""
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, peakFig, t.Goal, t.Figure, verdict(t))
		}
	}
	for i, t := range r.Memory {
		name := ""
		if i == 0 {
			name = "memory"
		}
		fmt.Fprintf(&b, "| %s | | %s | %s | %s |\n", name, t.Goal, t.Figure, verdict(t))
	}
	return b.String()
}

func (r *Report) write(dir string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), raw, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), []byte(r.html()), 0o644)
}
