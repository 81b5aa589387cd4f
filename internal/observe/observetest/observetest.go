// Package observetest reads a service's metrics as Prometheus would, for
// tests that drive a real handler and then check the series it left.
package observetest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/platformco/platform/internal/observe"
)

// Scrape serves m's /metrics once and parses the text format.
func Scrape(t testing.TB, m *observe.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// ScrapeAddr reads the /metrics a service serves on addr (METRICS_ADDR),
// waiting up to 10 s for the listener.
func ScrapeAddr(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + addr + "/metrics"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", addr, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// FreeAddr names a loopback address nothing listens on, for METRICS_ADDR.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Value sums the counter, gauge or histogram sample count of the series of
// fam whose labels include labels.
func Value(fam *dto.MetricFamily, labels map[string]string) float64 {
	total := 0.0
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return total
}

// Want checks that name's series with labels add up to want.
func Want(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	fam := fams[name]
	if fam == nil {
		t.Errorf("scrape has no %s", name)
		return
	}
	if got := Value(fam, labels); got != want {
		t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
	}
}

// LabelNames returns the label names of fam's series, service included.
func LabelNames(fam *dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			names[l.GetName()] = true
		}
	}
	return names
}
