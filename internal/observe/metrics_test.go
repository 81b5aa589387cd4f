package observe_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// scrape reads addr's /metrics and parses it.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: status %d: %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

func labelValues(fam *dto.MetricFamily, name string) map[string]bool {
	vals := map[string]bool{}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				vals[l.GetValue()] = true
			}
		}
	}
	return vals
}

func counter(fam *dto.MetricFamily, labels map[string]string) float64 {
	total := 0.0
next:
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
				continue next
			}
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

func TestMetricsLabelRequestsByRoutePatternNotRawPath(t *testing.T) {
	m := observe.New("box")
	addr, stop, err := m.Serve(context.Background(), "127.0.0.1:0", discard())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /v1/boom", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	write := func(w http.ResponseWriter, r *http.Request, status int, code, message string) { w.WriteHeader(status) }
	srv := httptest.NewServer(m.Middleware(httpx.Finish(mux, discard(), write)))
	defer srv.Close()

	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/things/" + ids[0]},
		{"GET", "/v1/things/" + ids[1]},
		{"POST", "/v1/things/" + ids[2]},
		{"GET", "/nowhere/" + ids[2]},
		{"BREW", "/v1/things/x"},
		{"GET", "/v1/boom"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	fams := scrape(t, addr)
	for _, name := range []string{
		"platform_http_requests_total", "platform_http_request_duration_seconds", "platform_http_requests_in_flight",
		"platform_build_info", "go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total",
	} {
		if fams[name] == nil {
			t.Errorf("scrape has no %s", name)
		}
	}
	reqs := fams["platform_http_requests_total"]
	if reqs == nil {
		t.FailNow()
	}
	for label, want := range map[string][]string{
		"route":   {"/v1/things/{id}", "/v1/boom", "unmatched"},
		"method":  {"GET", "POST", "other"},
		"code":    {"2xx", "4xx", "5xx"},
		"service": {"box"},
	} {
		got := labelValues(reqs, label)
		if len(got) != len(want) {
			t.Errorf("%s values: got %v, want exactly %v", label, got, want)
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("%s values: got %v, want %q among them", label, got, w)
			}
		}
	}
	for _, fam := range fams {
		for _, mt := range fam.GetMetric() {
			for _, l := range mt.GetLabel() {
				for _, id := range ids {
					if strings.Contains(l.GetValue(), id) {
						t.Errorf("%s label %s carries a request's id: %q", fam.GetName(), l.GetName(), l.GetValue())
					}
				}
			}
		}
	}
	if got := counter(reqs, map[string]string{"route": "/v1/things/{id}", "method": "GET", "code": "2xx"}); got != 2 {
		t.Errorf("GET /v1/things/{id} 2xx: got %v, want 2", got)
	}
	if got := counter(reqs, map[string]string{"route": "/v1/boom", "code": "5xx"}); got != 1 {
		t.Errorf("/v1/boom 5xx: got %v, want 1", got)
	}
	if got := labelValues(fams["platform_build_info"], "version"); len(got) != 1 {
		t.Errorf("build info versions: got %v, want one", got)
	}
}

func TestMetricsCountEachStatusClassOfARouteAndTimeThemAll(t *testing.T) {
	m := observe.New("box")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil {
			t.Errorf("code %q: %v", r.PathValue("code"), err)
		}
		w.WriteHeader(code)
	})
	h := m.Middleware(httpx.RecordRoute(mux))
	for _, code := range []string{"200", "404", "204", "999", "200"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/status/"+code, nil))
	}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	route := "/v1/status/{code}"
	reqs := byName["platform_http_requests_total"]
	for class, want := range map[string]float64{"2xx": 3, "4xx": 1, "9xx": 1, "5xx": 0} {
		if got := counter(reqs, map[string]string{"route": route, "method": "GET", "code": class}); got != want {
			t.Errorf("requests %s = %v, want %v", class, got, want)
		}
	}
	if got := labelValues(reqs, "code"); got["5xx"] {
		t.Errorf("codes %v: a 5xx series without a 5xx served", got)
	}
	var timed uint64
	for _, s := range byName["platform_http_request_duration_seconds"].GetMetric() {
		timed += s.GetHistogram().GetSampleCount()
	}
	if timed != 5 {
		t.Errorf("%d requests timed, want 5", timed)
	}
}

func TestStartWithoutAddressServesNothingAndRecordsNothing(t *testing.T) {
	m, stop, err := observe.Start(context.Background(), "identity", "", discard())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if m != nil {
		t.Fatalf("Start without METRICS_ADDR: got metrics %v, want nil", m)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	if got := m.Middleware(h); got == nil {
		t.Fatal("nil Metrics' Middleware: got nil handler, want the handler itself")
	}
	m.Database(nil, "identity")
}

func TestStartRefusesABadAddress(t *testing.T) {
	_, _, err := observe.Start(context.Background(), "identity", "not-an-address", discard())
	if err == nil || !strings.Contains(err.Error(), "METRICS_ADDR") {
		t.Fatalf("got %v, want an error naming METRICS_ADDR", err)
	}
}

func TestOutboxMetricsReportBacklogAgeAndParkedRows(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		now := time.Now()
		db.Now = func() time.Time { return now }
		insert := func(created time.Time, parked bool) {
			t.Helper()
			var parkedAt any
			if parked {
				parkedAt = sqldb.Timestamp(created)
			}
			ts := sqldb.Timestamp(created)
			if _, err := db.Exec(ctx, `INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, parked_at)
				VALUES ($1, 'identity.user.create', 'identity', $2, $3, '{}', $3, $3, $4)`, uuid.NewString(), uuid.NewString(), ts, parkedAt); err != nil {
				t.Fatal(err)
			}
		}
		insert(now.Add(-90*time.Second), false)
		insert(now.Add(-10*time.Second), false)
		insert(now.Add(-time.Hour), true)

		m := observe.New("identity")
		m.Database(db.DB, "identity")
		m.Outbox(db, discard())
		addr, stop, err := m.Serve(ctx, "127.0.0.1:0", discard())
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		fams := scrape(t, addr)
		for name, want := range map[string]float64{
			"platform_outbox_unpublished_rows": 2,
			"platform_outbox_parked_rows":      1,
			"platform_outbox_scrape_ok":        1,
		} {
			if fams[name] == nil {
				t.Errorf("scrape has no %s", name)
				continue
			}
			if got := counter(fams[name], nil); got != want {
				t.Errorf("%s: got %v, want %v", name, got, want)
			}
		}
		if fam := fams["platform_outbox_oldest_unpublished_age_seconds"]; fam == nil {
			t.Error("scrape has no platform_outbox_oldest_unpublished_age_seconds")
		} else if got := counter(fam, nil); got < 89 || got > 91 {
			t.Errorf("oldest unpublished age: got %v s, want 90", got)
		}
		if fams["go_sql_open_connections"] == nil {
			t.Error("scrape has no database pool gauges (go_sql_open_connections)")
		}
	})
}

func TestUpstreamsTimesCallsByUpstreamAndStatusClass(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer up.Close()
	m := observe.New("gateway")
	client := &http.Client{Transport: m.Upstreams(http.DefaultTransport)}
	for _, u := range []string{up.URL + "/a/" + uuid.NewString(), "http://127.0.0.1:1/b"} {
		if resp, err := client.Get(u); err == nil {
			resp.Body.Close()
		}
	}
	addr, stop, err := m.Serve(context.Background(), "127.0.0.1:0", discard())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fam := scrape(t, addr)["platform_upstream_request_duration_seconds"]
	if fam == nil {
		t.Fatal("scrape has no platform_upstream_request_duration_seconds")
	}
	got := map[string]bool{}
	for _, mt := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range mt.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["upstream"]+" "+labels["code"]] = true
	}
	want := []string{strings.TrimPrefix(up.URL, "http://") + " 5xx", "127.0.0.1:1 error"}
	if len(got) != len(want) {
		t.Errorf("series: got %v, want %v", got, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("series: got %v, want %q among them", got, w)
		}
	}
}
