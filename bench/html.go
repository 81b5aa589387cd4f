package main

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// html renders the report as one self-contained page: tables and inline
// SVG charts, no script and nothing fetched.
func (r *Report) html() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>platform bench ` + html.EscapeString(r.Engine) + `</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.missed{color:#b00;font-weight:600}.met{color:#070}
h2{margin-top:2em;border-bottom:1px solid #ddd}svg{background:#fff;border:1px solid #eee;margin:.4em .4em 0 0}
.charts{display:flex;flex-wrap:wrap}</style></head><body>`)
	fmt.Fprintf(&b, "<h1>platform bench — %s</h1><p>%s · %d cores · %.0fs per level after %.0fs warm-up · concurrency %v · run took %.0fs</p>",
		html.EscapeString(r.Engine), r.Started.Format("2006-01-02 15:04:05 UTC"), r.GoMaxProcs, r.Duration, r.Warmup, r.Levels, r.Elapsed)
	b.WriteString("<h2>Targets</h2><table><tr><th>scenario</th><th>target</th><th>measured</th><th>verdict</th></tr>")
	row := func(name string, t Target) {
		v := verdict(t)
		class := "met"
		if v == "MISSED" {
			class = "missed"
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td class=%q>%s</td></tr>", html.EscapeString(name), html.EscapeString(t.Goal), html.EscapeString(t.Figure), class, v)
	}
	for _, s := range r.Scenarios {
		for _, t := range s.Targets {
			row(s.Name, t)
		}
	}
	for _, t := range r.Memory {
		row("memory", t)
	}
	b.WriteString("</table><h3>Idle memory</h3><table><tr><th>service</th><th>RSS MiB</th></tr>")
	for _, n := range []string{"identity", "box", "gateway"} {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%.1f</td></tr>", n, r.Idle[n].RSSMiB)
	}
	b.WriteString("</table>")
	for _, s := range r.Scenarios {
		s.htmlSection(&b)
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

func (s *Scenario) htmlSection(b *strings.Builder) {
	fmt.Fprintf(b, "<h2>%s</h2>", html.EscapeString(s.Title))
	if s.BaselineName != "" {
		fmt.Fprintf(b, "<p>Baseline: %s", html.EscapeString(s.BaselineName))
		if s.BaselineRate > 0 {
			fmt.Fprintf(b, " — %.0f/s", s.BaselineRate)
		}
		if s.Ratio > 0 {
			fmt.Fprintf(b, " · ratio %s", pct(s.Ratio))
		}
		b.WriteString("</p>")
	}
	b.WriteString("<table><tr><th>clients</th><th>" + html.EscapeString(s.Unit) + "</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>errors</th><th>baseline</th><th>ratio</th></tr>")
	for i, l := range s.Levels {
		base, ratio := "", ""
		if i < len(s.Baseline) {
			base, ratio = fmt.Sprintf("%.0f", s.Baseline[i].RPS), pct(l.RPS/s.Baseline[i].RPS)
		} else if s.BaselineRate > 0 {
			base, ratio = fmt.Sprintf("%.0f", s.BaselineRate), pct(l.RPS/s.BaselineRate)
		}
		fmt.Fprintf(b, "<tr><td>%d</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%d</td><td>%s</td><td>%s</td></tr>",
			l.Concurrency, l.RPS, l.P50, l.P90, l.P99, l.Max, l.Errors, base, ratio)
	}
	for _, l := range s.Side {
		fmt.Fprintf(b, "<tr><td>%d (%s)</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%d</td><td></td><td></td></tr>",
			l.Concurrency, html.EscapeString(s.SideName), l.RPS, l.P50, l.P90, l.P99, l.Max, l.Errors)
	}
	b.WriteString("</table>")
	if len(s.Memory) > 0 {
		b.WriteString("<p>Memory in this scenario (MiB, RSS at end / peak): ")
		for _, n := range []string{"identity", "box", "gateway"} {
			if m, ok := s.Memory[n]; ok {
				fmt.Fprintf(b, "%s %.1f / %.1f · ", n, m.RSSMiB, m.PeakMiB)
			}
		}
		b.WriteString("</p>")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "<p>%s</p>", html.EscapeString(n))
	}
	b.WriteString(`<div class="charts">`)
	if len(s.Levels) > 1 || len(s.Baseline) > 1 {
		b.WriteString(throughputChart(s))
	}
	b.WriteString(latencyChart(s))
	for _, ser := range s.Series {
		b.WriteString(lineChart(ser.Name, "s", ser.Unit, []line{{name: ser.Name, color: "#1f77b4", xs: ser.X, ys: ser.Y}}, nil, nil))
	}
	b.WriteString("</div>")
}

type line struct {
	name   string
	color  string
	xs, ys []float64
}

type mark struct {
	x     float64
	label string
}

// throughputChart plots throughput by concurrency, the scenario against
// its baseline, the levels evenly spaced.
func throughputChart(s *Scenario) string {
	var lines []line
	var ticks []mark
	cur := line{name: s.Name, color: "#d62728"}
	for i, l := range s.Levels {
		cur.xs, cur.ys = append(cur.xs, float64(i)), append(cur.ys, l.RPS)
		ticks = append(ticks, mark{float64(i), strconv.Itoa(l.Concurrency)})
	}
	lines = append(lines, cur)
	if len(s.Baseline) > 0 {
		base := line{name: "baseline", color: "#1f77b4"}
		for i, l := range s.Baseline {
			base.xs, base.ys = append(base.xs, float64(i)), append(base.ys, l.RPS)
		}
		lines = append(lines, base)
	} else if s.BaselineRate > 0 {
		lines = append(lines, line{name: "baseline", color: "#1f77b4", xs: []float64{0, float64(max(len(s.Levels)-1, 1))}, ys: []float64{s.BaselineRate, s.BaselineRate}})
	}
	return lineChart("throughput by concurrency", "clients", s.Unit, lines, ticks, nil)
}

// latencyChart plots p50 and p99 over time, every level's run laid end to
// end with a mark where each begins.
func latencyChart(s *Scenario) string {
	p50 := line{name: "p50", color: "#2ca02c"}
	p99 := line{name: "p99", color: "#d62728"}
	var marks []mark
	offset := 0.0
	for _, l := range s.Levels {
		marks = append(marks, mark{offset, strconv.Itoa(l.Concurrency)})
		for _, sl := range l.Timeline {
			p50.xs, p50.ys = append(p50.xs, offset+sl.T), append(p50.ys, sl.P50)
			p99.xs, p99.ys = append(p99.xs, offset+sl.T), append(p99.ys, sl.P99)
		}
		offset += l.Duration
	}
	return lineChart("latency over time (100 ms slices; marks: clients)", "s", "ms", []line{p50, p99}, nil, marks)
}

// lineChart draws lines on linear axes from zero; ticks replace the x
// axis's numbers, marks are labelled vertical rules.
func lineChart(title, xUnit, yUnit string, lines []line, ticks []mark, marks []mark) string {
	const w, h, left, right, top, bottom = 520.0, 300.0, 60.0, 15.0, 30.0, 40.0
	xmax, ymax := 0.0, 0.0
	for _, l := range lines {
		for i := range l.xs {
			xmax, ymax = math.Max(xmax, l.xs[i]), math.Max(ymax, l.ys[i])
		}
	}
	if xmax == 0 {
		xmax = 1
	}
	ymax = niceCeil(ymax * 1.05)
	px := func(x float64) float64 { return left + x/xmax*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/ymax*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="11">`, w, h, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-weight="600">%s</text>`, left, html.EscapeString(title))
	for i := 0; i <= 5; i++ {
		y := ymax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			left, w-right, py(y), py(y), left-4, py(y)+4, short(y))
	}
	fmt.Fprintf(&b, `<text x="12" y="%.0f" transform="rotate(-90 12 %.0f)" text-anchor="middle">%s</text>`, h/2, h/2, html.EscapeString(yUnit))
	if ticks != nil {
		for _, t := range ticks {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(t.x), h-bottom+14, html.EscapeString(t.label))
		}
	} else {
		for i := 0; i <= 5; i++ {
			x := xmax * float64(i) / 5
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), h-bottom+14, short(x))
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (left+w-right)/2, h-8, html.EscapeString(xUnit))
	for _, m := range marks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="3,3"/><text x="%.1f" y="%.1f">%s</text>`,
			px(m.x), px(m.x), top, h-bottom, px(m.x)+3, top+10, html.EscapeString(m.label))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#444"/>`, left, w-right, h-bottom, h-bottom)
	for i, l := range lines {
		if len(l.xs) == 0 {
			continue
		}
		var pts strings.Builder
		for j := range l.xs {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(l.xs[j]), py(l.ys[j]))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, l.color, pts.String())
		if len(l.xs) <= 12 {
			for j := range l.xs {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, px(l.xs[j]), py(l.ys[j]), l.color)
			}
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`,
			w-right-110, top+18+float64(i)*14, l.color, w-right-96, top+22+float64(i)*14, html.EscapeString(l.name))
	}
	b.WriteString("</svg>")
	return b.String()
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 10 || v == 0:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}
