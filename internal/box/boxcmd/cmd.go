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
	"sync/atomic"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/identityclient"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/debugsrv"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
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
		cfg, err := LoadConfig(env.Getenv)
		if err != nil {
			return err
		}
		logger := env.Logger("box")
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
		}
		return Serve(ctx, cfg, logger, ln)
	case "migrate":
		if len(args) > 1 {
			return cli.Usagef("box migrate takes no arguments")
		}
		r := config.New(env.Getenv)
		r.Require("DATABASE_URL", "to migrate")
		url := r.String("DATABASE_URL", "")
		if err := r.Err(); err != nil {
			return err
		}
		if err := validateDatabaseURL(url); err != nil {
			return err
		}
		n, err := migrate(ctx, url)
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

// Config is the entitlement service's configuration.
type Config struct {
	// Port is PORT (default 8082).
	Port int
	// DatabaseURL is DATABASE_URL; empty serves only the probes.
	DatabaseURL string
	// IdentityURL is BOX_IDENTITY_URL; empty makes every authorized call 503.
	IdentityURL string
	// IdentityTimeout is BOX_IDENTITY_TIMEOUT (default 2s): the bound of
	// every identity round trip.
	IdentityTimeout time.Duration
	// CapabilityTTL is BOX_CAPABILITY_TTL (default 5m).
	CapabilityTTL time.Duration
	// DebugAddr (DEBUG_ADDR, loopback only) serves the profiling endpoints.
	DebugAddr string
	// EventsURL is EVENTS_URL; with DATABASE_URL, box consumes
	// identity.account.deleted from it (events.go).
	EventsURL string
	// MasterKey is BOX_MASTER_KEY (base64 of exactly 32 bytes, required
	// with DATABASE_URL): it seals stored idempotent replays.
	MasterKey []byte
}

// LoadConfig reads and validates box's settings; an error names the
// variable and the rule.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := config.New(getenv)
	cfg := Config{
		Port:            r.Port("PORT", 8082),
		DatabaseURL:     r.String("DATABASE_URL", ""),
		IdentityURL:     r.URL("BOX_IDENTITY_URL"),
		IdentityTimeout: r.Duration("BOX_IDENTITY_TIMEOUT", identityclient.DefaultTimeout),
		CapabilityTTL:   r.Duration("BOX_CAPABILITY_TTL", box.DefaultCapabilityTTL),
		DebugAddr:       r.LoopbackAddr("DEBUG_ADDR"),
		EventsURL:       r.String("EVENTS_URL", ""),
	}
	if err := r.Err(); err != nil {
		return Config{}, err
	}
	if err := validateEventsURL(cfg.EventsURL); err != nil {
		return Config{}, err
	}
	if cfg.DatabaseURL != "" {
		if err := validateDatabaseURL(cfg.DatabaseURL); err != nil {
			return Config{}, err
		}
		r.Require("BOX_MASTER_KEY", "whenever DATABASE_URL is set")
		cfg.MasterKey = r.Key32("BOX_MASTER_KEY")
		if err := r.Err(); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

func validateDatabaseURL(u string) error {
	if _, _, err := sqldb.ParseURL(u); err != nil {
		return fmt.Errorf("DATABASE_URL: %v", err)
	}
	return nil
}

// Serve runs box on ln until ctx is done, then drains in-flight requests.
// It does not migrate: readiness stays 503 while migrations are pending.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	if cfg.DebugAddr != "" {
		_, stopDebug, err := debugsrv.Start(ctx, cfg.DebugAddr, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("DEBUG_ADDR: %w", err)
		}
		defer stopDebug()
	}
	readiness := func(context.Context) httpx.Readiness {
		return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": "none"}}
	}
	var (
		svc  *box.Service
		idem *idempotency.Store
	)
	if cfg.DatabaseURL != "" {
		db, err := sqldb.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			ln.Close()
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
		defer db.Close()
		if cfg.IdentityURL == "" {
			logger.Warn("BOX_IDENTITY_URL is empty: every authorized call answers 503")
		}
		identity := identityclient.New(cfg.IdentityURL, cfg.IdentityTimeout, logger)
		defer identity.Close()
		store := sqlstore.New(db)
		if cfg.EventsURL != "" {
			stop, err := startConsumers(ctx, db, store, cfg.EventsURL, logger)
			if err != nil {
				ln.Close()
				return err
			}
			defer stop()
		}
		svc = box.NewService(store, identity, cfg.CapabilityTTL)
		idem = idempotency.New(db, cfg.MasterKey)
		readiness = databaseReadiness(db, logger)
	}
	return httpx.Serve(ctx, ln, httpapi.New(svc, logger, readiness, idem), logger)
}

// databaseReadiness is ready while the database answers within two seconds
// and its schema is current. Once migrations are found applied, they are
// not checked again: nothing un-applies them.
func databaseReadiness(db *sqldb.DB, logger *slog.Logger) func(context.Context) httpx.Readiness {
	deps := string(db.Engine)
	var migrated atomic.Bool
	ok := httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": deps}}
	down := httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": deps}}
	return func(ctx context.Context) httpx.Readiness {
		if err := db.Ready(ctx); err != nil {
			logger.Warn("readiness: database does not answer", "error", err.Error())
			return down
		}
		if !migrated.Load() {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			pending, err := db.Pending(pctx, sqlstore.Migrations)
			if err != nil || pending {
				logger.Warn("readiness: migrations pending", "pending", pending, "error", errString(err))
				return down
			}
			migrated.Store(true)
		}
		return ok
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
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
