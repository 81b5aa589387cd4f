package observe_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/observe"
)

func TestTelemetryStartsWhatIsSetAndStopsIt(t *testing.T) {
	ctx := context.Background()
	metrics, tracing, stop, err := observe.Telemetry{}.Start(ctx, "svc", slog.New(slog.DiscardHandler))
	if err != nil || metrics != nil || tracing != nil {
		t.Fatalf("nothing set: got %v, %v, %v; want nil metrics and tracing, no error", metrics, tracing, err)
	}
	stop()

	debug, scrape := freeAddr(t), freeAddr(t)
	metrics, _, stop, err = observe.Telemetry{DebugAddr: debug, MetricsAddr: scrape}.Start(ctx, "svc", slog.New(slog.DiscardHandler))
	if err != nil || metrics == nil {
		t.Fatalf("Start: %v (metrics %v)", err, metrics)
	}
	for _, url := range []string{"http://" + debug + "/debug/pprof/", "http://" + scrape + "/metrics"} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", url, resp.StatusCode)
		}
	}
	stop()
	for _, url := range []string{"http://" + debug + "/debug/pprof/", "http://" + scrape + "/metrics"} {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			t.Errorf("GET %s after stop: answered %d, want the listener closed", url, resp.StatusCode)
		}
	}
}

func TestTelemetryStartFailsNamingTheVariableAndLeavesNothingRunning(t *testing.T) {
	debug := freeAddr(t)
	_, _, _, err := observe.Telemetry{DebugAddr: debug, MetricsAddr: "256.0.0.1:1"}.Start(context.Background(), "svc", slog.New(slog.DiscardHandler))
	if err == nil || !strings.HasPrefix(err.Error(), "METRICS_ADDR:") {
		t.Fatalf("err = %v, want one naming METRICS_ADDR", err)
	}
	if resp, err := http.Get("http://" + debug + "/debug/pprof/"); err == nil {
		resp.Body.Close()
		t.Errorf("the profiling listener still answers after Start failed")
	}
}

// Every service embeds Telemetry in its Config: the variables' rules hold
// there (a profiling listener only on loopback).
func TestTelemetryRulesHoldWhereEmbedded(t *testing.T) {
	var cfg struct {
		Port int `env:"PORT, default=8080" rule:"port"`
		observe.Telemetry
	}
	env := map[string]string{"DEBUG_ADDR": "0.0.0.0:6060", "METRICS_ADDR": ":9090"}
	err := config.Load(context.Background(), func(k string) string { return env[k] }, &cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "DEBUG_ADDR:") {
		t.Fatalf("err = %v, want one naming DEBUG_ADDR", err)
	}
	env["DEBUG_ADDR"] = "127.0.0.1:6060"
	if err := config.Load(context.Background(), func(k string) string { return env[k] }, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.DebugAddr != "127.0.0.1:6060" || cfg.MetricsAddr != ":9090" || cfg.SpanQueue != 8192 {
		t.Errorf("config = %+v, want the embedded fields read, the span queue's default", cfg)
	}
	env["OTEL_BSP_MAX_QUEUE_SIZE"] = "0"
	err = config.Load(context.Background(), func(k string) string { return env[k] }, &cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "OTEL_BSP_MAX_QUEUE_SIZE:") {
		t.Fatalf("err = %v, want one naming OTEL_BSP_MAX_QUEUE_SIZE", err)
	}
}
