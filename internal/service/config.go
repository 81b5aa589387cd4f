// Package service is the kit every service is written on: the base
// configuration it embeds (Base), its command line (Command: serve,
// migrate, help and its own commands), one Serve (telemetry, the database
// gate, background loops, the idempotency purge, graceful shutdown),
// readiness over named checks (Readiness) and the error writer of its
// envelope (Errors). A service differs from another only in its routes,
// its domain and its loops.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
)

// Base is the configuration every service's Config embeds, so the
// variables below mean the same everywhere. PORT has no default here: each
// service's Command gives its own (DefaultPort).
type Base struct {
	Port int `env:"PORT" rule:"port"`
	// LogLevel is checked like every other variable: a bad value stops the
	// service with one line instead of logging at info.
	LogLevel slog.Level `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
	// DatabaseURL is postgres://… or sqlite:PATH. A service whose Spec has
	// migrations serves only its probes and /openapi.json without it.
	DatabaseURL string `env:"DATABASE_URL"`
	// DatabaseTimeout bounds every call's database work (sqldb.Options).
	DatabaseTimeout time.Duration `env:"DATABASE_TIMEOUT, default=5s" rule:"positive"`
	// Telemetry is DEBUG_ADDR, METRICS_ADDR and the OTEL_* variables.
	observe.Telemetry
}

// Config is a service's configuration: a struct embedding Base.
type Config interface {
	base() *Base
}

func (b *Base) base() *Base { return b }

// Validate implements config.Validator for the base's own rules.
func (b *Base) Validate() error {
	if b.DatabaseURL != "" {
		if _, _, err := sqldb.ParseURL(b.DatabaseURL); err != nil {
			return fmt.Errorf("DATABASE_URL: %v", err)
		}
	}
	return nil
}

// Load reads cfg from getenv (config.Load): the base's variables first,
// so a bad LOG_LEVEL or DATABASE_URL is the line an operator sees whatever
// else is wrong, then the service's own and its Validate.
func Load(ctx context.Context, getenv func(string) string, cfg Config) error {
	if err := config.Load(ctx, getenv, cfg.base()); err != nil {
		return err
	}
	return config.Load(ctx, getenv, cfg)
}
