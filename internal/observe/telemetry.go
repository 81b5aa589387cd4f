package observe

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/platformco/platform/internal/debugsrv"
)

// Telemetry is the part of every service's configuration that says what
// runs beside its public listener, each part on only when its variable is
// set. A service's Config embeds it, so the variables and their rules are
// the same everywhere.
type Telemetry struct {
	// DebugAddr serves the Go runtime's profiles, on loopback only
	// (package debugsrv).
	DebugAddr string `env:"DEBUG_ADDR" rule:"loopback"`
	// MetricsAddr serves Prometheus metrics at /metrics on a listener of
	// its own, never the public port.
	MetricsAddr string `env:"METRICS_ADDR"`
	// OTLPEndpoint exports traces over OTLP/HTTP (the exporter reads the
	// other standard OTEL_EXPORTER_OTLP_* variables itself).
	OTLPEndpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	// SpanQueue is how many ended spans wait for export before new ones
	// are dropped: the SDK's 2,048 is 0.15 s of a service ending 14,000
	// a second (7,000 requests), less than one slow export to a busy
	// collector; 8,192 spans are a few MiB at most.
	SpanQueue int `env:"OTEL_BSP_MAX_QUEUE_SIZE, default=8192" rule:"positive"`
}

// Start starts service's profiling listener, metrics and trace export as
// t says. The Metrics and Tracing it returns are nil when off, and both
// accept being used nil. stop ends them in reverse order, exporting the
// spans still buffered; on an error nothing is left running.
func (t Telemetry) Start(ctx context.Context, service string, logger *slog.Logger) (*Metrics, *Tracing, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if t.DebugAddr != "" {
		_, stopDebug, err := debugsrv.Start(ctx, t.DebugAddr, logger)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("DEBUG_ADDR: %w", err)
		}
		stops = append(stops, stopDebug)
	}
	metrics, stopMetrics, err := Start(ctx, service, t.MetricsAddr, logger)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, stopMetrics)
	tracing, stopTracing, err := StartTracing(ctx, service, t.OTLPEndpoint, t.SpanQueue)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stops = append(stops, func() { _ = stopTracing(context.WithoutCancel(ctx)) })
	return metrics, tracing, stop, nil
}
