// Package boxcmd is `platform box`: the entitlement service (serve), its
// schema (migrate) and the operator commands that speak its HTTP API
// (grant, revoke, list) for the reconciliation procedure.
package boxcmd

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/accountdeleted"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/service"
)

// Command is `platform box`.
var Command = service.Command[Config, *Config]{
	Name:        "box",
	Summary:     "the entitlement service",
	DefaultPort: 8082,
	Serve:       Serve,
	Migrate:     migrate,
	Commands:    map[string]func(context.Context, []string, cli.Env) error{"grant": runGrant, "revoke": runRevoke, "list": runList},
	Usage: `  grant --account ID --product P [--range R] [--source S] [--reference REF] [--max-installations N]
  revoke ID
  list [--account ID] [--product P] [--status S]
             grant, revoke and list call the service at BOX_URL with the
             staff token in PLATFORM_TOKEN`,
}

// Config is the entitlement service's configuration (service.Load).
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (empty serves only the probes
	// and /openapi.json), DATABASE_TIMEOUT and telemetry.
	service.Base
	// IdentityURL empty makes every authorized call 503.
	IdentityURL string `env:"BOX_IDENTITY_URL" rule:"url"`
	// IdentityTimeout bounds every identity round trip.
	IdentityTimeout time.Duration `env:"BOX_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	CapabilityTTL   time.Duration `env:"BOX_CAPABILITY_TTL, default=5m" rule:"positive"`
	// EventsURL, with DATABASE_URL, is where box consumes
	// identity.account.deleted (events.go).
	EventsURL string `env:"EVENTS_URL"`
	// MasterKey seals stored idempotent replays; required with
	// DATABASE_URL.
	MasterKey config.Key `env:"BOX_MASTER_KEY" rule:"key32"`
	// InstallationTTL is how long an installation counts toward its
	// grant's limit without a heartbeat.
	InstallationTTL time.Duration `env:"BOX_INSTALLATION_TTL, default=168h" rule:"positive"`
	// LicenseTTL is how long a licence file is valid.
	LicenseTTL time.Duration `env:"BOX_LICENSE_TTL, default=720h" rule:"positive"`
	// LicenseKey is the licence signing keys: base64 Ed25519 seeds (32
	// bytes), comma-separated; the first signs and all are published, so
	// a key is rotated by putting the new one first and dropping the old
	// one once its licences have expired. Empty: no licence is issued.
	LicenseKey string `env:"BOX_LICENSE_KEY"`
	// PublicURL is box's URL as customers reach it (the gateway's), the
	// licences' issuer.
	PublicURL string `env:"BOX_PUBLIC_URL, default=http://localhost:8080" rule:"url"`

	licenseKeys []ed25519.PrivateKey
}

// parseLicenseKeys reads BOX_LICENSE_KEY.
func parseLicenseKeys(v string) ([]ed25519.PrivateKey, error) {
	var keys []ed25519.PrivateKey
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		seed, err := base64.StdEncoding.DecodeString(part)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("BOX_LICENSE_KEY: key %d is not the base64 of a 32-byte Ed25519 seed", i+1)
		}
		keys = append(keys, ed25519.NewKeyFromSeed(seed))
	}
	return keys, nil
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	c.IdentityURL = strings.TrimRight(c.IdentityURL, "/")
	if c.DatabaseURL != "" && len(c.MasterKey) == 0 {
		return errors.New("BOX_MASTER_KEY: is required whenever DATABASE_URL is set (base64 of exactly 32 bytes)")
	}
	keys, err := parseLicenseKeys(c.LicenseKey)
	if err != nil {
		return err
	}
	c.licenseKeys = keys
	return validateEventsURL(c.EventsURL)
}

// Serve runs box on ln until ctx is done, then drains in-flight requests
// (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		identity httpapi.Identity
	)
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "box",
		Migrations: sqlstore.Migrations,
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: app.DB != nil}
			if app.DB == nil {
				return httpapi.NewServer(deps), nil
			}
			if cfg.EventsURL != "" {
				stop, err := app.Metrics.Consumers(app.DB, cfg.EventsURL, events.Stream{}, []string{accountdeleted.ConsumerName}, logger)
				if err != nil {
					return nil, fmt.Errorf("EVENTS_URL: %w", err)
				}
				app.OnStop(stop)
			}
			if cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "BOX_IDENTITY_URL is empty: every authorized call answers 503")
			}
			identity = httpapi.NewIdentity(cfg.IdentityURL, cfg.IdentityTimeout, logger)
			app.OnStop(identity.Close)
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			store := sqlstore.New(app.DB)
			if cfg.EventsURL != "" {
				stop, err := startConsumers(ctx, app.DB, store, cfg.EventsURL, logger)
				if err != nil {
					return nil, err
				}
				app.OnStop(stop)
			}
			if len(cfg.licenseKeys) == 0 {
				logger.WarnContext(ctx, "BOX_LICENSE_KEY is empty: activations carry no licence and licence requests answer 503")
			}
			deps.Service = box.NewService(countOperations(store, app.Metrics), identity, cfg.CapabilityTTL).WithLicensing(box.Licensing{
				InstallationTTL: cfg.InstallationTTL, LicenseTTL: cfg.LicenseTTL,
				Issuer: strings.TrimRight(cfg.PublicURL, "/"), Keys: cfg.licenseKeys,
			})
			deps.Idempotency = app.Idempotency(cfg.MasterKey)
			return httpapi.NewServer(deps), nil
		},
	})
}

// Migrate applies box's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

// migrate applies box's schema and the event consumer's tables.
func migrate(ctx context.Context, databaseURL string) (int, error) {
	return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations), migrateConsumers)
}
