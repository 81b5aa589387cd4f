// Package boxcmd is `platform box`: the entitlement service (serve), its
// schema (migrate) and the operator commands that speak its HTTP API
// (grant, revoke, list) for the reconciliation procedure.
package boxcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/accountdeleted"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
)

const usage = `usage: platform box <command>

  serve                      run the entitlement service
  migrate                    apply box's schema migrations to DATABASE_URL
  grant --account ID --product P [--range R] [--source S] [--reference REF]
  revoke ID
  list [--account ID] [--product P] [--status S]

grant, revoke and list call the service at BOX_URL with the staff token in
PLATFORM_TOKEN.`

// Run runs a `platform box` subcommand.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("box: no subcommand given\n%s", usage)
	}
	switch args[0] {
	case "serve":
		if len(args) > 1 {
			return cli.Usagef("box serve takes no arguments")
		}
		var cfg Config
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
		}
		return Serve(ctx, cfg, env.Logger("box"), ln)
	case "migrate":
		if len(args) > 1 {
			return cli.Usagef("box migrate takes no arguments")
		}
		var cfg struct {
			DatabaseURL string `env:"DATABASE_URL, required"`
		}
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
			return err
		}
		n, err := migrate(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "box: applied %d migration(s)\n", n)
		return nil
	case "grant":
		return runGrant(ctx, args[1:], env)
	case "revoke":
		return runRevoke(ctx, args[1:], env)
	case "list":
		return runList(ctx, args[1:], env)
	case "help", "-h", "--help":
		fmt.Fprintln(env.Stdout, usage)
		return nil
	default:
		return cli.Usagef("box: unknown subcommand %q\n%s", args[0], usage)
	}
}

// Config is the entitlement service's configuration (config.Load).
type Config struct {
	Port int `env:"PORT, default=8082" rule:"port"`
	// DatabaseURL empty serves only the probes and /openapi.json.
	DatabaseURL string `env:"DATABASE_URL"`
	// DatabaseTimeout bounds every call's database work (sqldb.Options).
	DatabaseTimeout time.Duration `env:"DATABASE_TIMEOUT, default=5s" rule:"positive"`
	// IdentityURL empty makes every authorized call 503.
	IdentityURL string `env:"BOX_IDENTITY_URL" rule:"url"`
	// IdentityTimeout bounds every identity round trip.
	IdentityTimeout time.Duration `env:"BOX_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	CapabilityTTL   time.Duration `env:"BOX_CAPABILITY_TTL, default=5m" rule:"positive"`
	// Telemetry is DEBUG_ADDR, METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT.
	observe.Telemetry
	LogLevel slog.Level `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
	// EventsURL, with DATABASE_URL, is where box consumes
	// identity.account.deleted (events.go).
	EventsURL string `env:"EVENTS_URL"`
	// MasterKey seals stored idempotent replays; required with
	// DATABASE_URL.
	MasterKey config.Key `env:"BOX_MASTER_KEY" rule:"key32"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	c.IdentityURL = strings.TrimRight(c.IdentityURL, "/")
	if c.DatabaseURL != "" {
		if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
			return fmt.Errorf("DATABASE_URL: %v", err)
		}
		if len(c.MasterKey) == 0 {
			return errors.New("BOX_MASTER_KEY: is required whenever DATABASE_URL is set (base64 of exactly 32 bytes)")
		}
	}
	return validateEventsURL(c.EventsURL)
}

// Serve runs box on ln until ctx is done, then drains in-flight requests.
// It does not migrate: it stops when the schema is behind, and while the
// database does not answer it serves 503 until it does (sqldb.Gate).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "box", logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopTelemetry()
	if cfg.DatabaseURL == "" {
		return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(httpapi.NewServer(httpapi.Deps{Logger: logger, Ready: httpx.NoDatabase}))), logger)
	}
	db, err := sqldb.New(cfg.DatabaseURL, sqldb.Options{Timeout: cfg.DatabaseTimeout})
	if err != nil {
		ln.Close()
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	metrics.Database(db.DB, "box")
	observe.Statements(db, metrics, tracing)
	if cfg.EventsURL != "" {
		stopConsumerMetrics, err := metrics.Consumers(db, cfg.EventsURL, events.Stream{}, []string{accountdeleted.ConsumerName}, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("EVENTS_URL: %w", err)
		}
		defer stopConsumerMetrics()
	}
	if cfg.IdentityURL == "" {
		logger.WarnContext(ctx, "BOX_IDENTITY_URL is empty: every authorized call answers 503")
	}
	identity := httpapi.NewIdentity(cfg.IdentityURL, cfg.IdentityTimeout, logger)
	defer identity.Close()
	gate := sqldb.NewGate(db, sqlstore.Migrations, "platform box migrate")
	deps := httpapi.Deps{Logger: logger, Ready: httpx.DatabaseReadiness(gate, db.Engine), Waiting: true}
	h := httpx.NewSwitch(httpapi.NewServer(deps))
	// The gate may open later, from its own goroutine; stop waits for it.
	var (
		mu            sync.Mutex
		stopConsumers = func() {}
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		stopConsumers()
	}()
	err = gate.Start(ctx, time.Second, logger, func(ctx context.Context) error {
		store := sqlstore.New(db)
		if cfg.EventsURL != "" {
			stop, err := startConsumers(ctx, db, store, cfg.EventsURL, logger)
			if err != nil {
				return err
			}
			mu.Lock()
			stopConsumers = stop
			mu.Unlock()
		}
		deps.Service = box.NewService(countOperations(store, metrics), identity, cfg.CapabilityTTL)
		deps.Idempotency = idempotency.New(db, cfg.MasterKey)
		h.Set(httpapi.NewServer(deps))
		return nil
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("box: %w", err)
	}
	return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(h)), logger)
}

// Migrate applies box's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

func migrate(ctx context.Context, databaseURL string) (int, error) {
	if databaseURL == "" {
		return 0, errors.New("DATABASE_URL: is required to migrate")
	}
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	n, err := db.Migrate(ctx, sqlstore.Migrations)
	if err != nil {
		return n, err
	}
	m, err := migrateConsumers(ctx, db)
	return n + m, err
}
