// Package pantrycmd is `platform pantry`: the project registry (serve)
// and its schema (migrate). Its outbox is published by `platform events
// publish --service pantry`, or by serve itself when EVENTS_URL is set (as
// `platform dev` does).
package pantrycmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/pantry/darkroomclient"
	"github.com/platformco/platform/internal/pantry/httpapi"
	"github.com/platformco/platform/internal/pantry/identityclient"
	"github.com/platformco/platform/internal/pantry/sqlstore"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// DefaultPort is pantry's PORT default (operations.md section 9).
const DefaultPort = 8080

// Command is `platform pantry`.
var Command = service.Command[Config, *Config]{
	Name:        "pantry",
	Summary:     "the project registry",
	DefaultPort: DefaultPort,
	Serve:       Serve,
	Migrate: func(ctx context.Context, databaseURL string) (int, error) {
		return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations))
	},
}

// Config is pantry's configuration (service.Load).
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (empty serves only the probes
	// and /openapi.json), DATABASE_TIMEOUT and telemetry.
	service.Base
	// IdentityIssuer is identity's issuer: tokens are verified against its
	// /.well-known/jwks.json. Empty makes every signed-in call 503.
	IdentityIssuer string `env:"IDENTITY_ISSUER" rule:"url"`
	// IdentityURL is where roles are asked; empty makes every write 503.
	IdentityURL     string        `env:"PANTRY_IDENTITY_URL" rule:"url"`
	IdentityTimeout time.Duration `env:"PANTRY_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	// DarkroomURL is where a logo is checked; empty makes setting a logo
	// 503.
	DarkroomURL     string        `env:"PANTRY_DARKROOM_URL" rule:"url"`
	DarkroomTimeout time.Duration `env:"PANTRY_DARKROOM_TIMEOUT, default=2s" rule:"positive"`
	// EventsURL, when set, has serve publish the outbox itself.
	EventsURL string `env:"EVENTS_URL"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	c.IdentityURL = strings.TrimRight(c.IdentityURL, "/")
	c.DarkroomURL = strings.TrimRight(c.DarkroomURL, "/")
	if c.EventsURL != "" {
		if err := events.ValidateURL(c.EventsURL); err != nil {
			return fmt.Errorf("EVENTS_URL: %v", err)
		}
	}
	return nil
}

// Serve runs pantry on ln until ctx is done (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		identity *identityclient.Client
		darkroom *darkroomclient.Client
	)
	engine := "none"
	if e, _, err := sqldb.ParseURL(cfg.DatabaseURL); err == nil && cfg.DatabaseURL != "" {
		engine = string(e)
	}
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "pantry",
		Migrations: sqlstore.Migrations,
		Render:     service.NamedDeps(map[string]string{"engine": engine}),
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if cfg.IdentityIssuer == "" || cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "IDENTITY_ISSUER or PANTRY_IDENTITY_URL is empty: every write answers 503")
			}
			if cfg.DarkroomURL == "" {
				logger.WarnContext(ctx, "PANTRY_DARKROOM_URL is empty: setting a logo answers 503")
			}
			identity = identityclient.New(identityclient.Options{Issuer: cfg.IdentityIssuer, BaseURL: cfg.IdentityURL,
				Timeout: cfg.IdentityTimeout, Logger: logger})
			darkroom = darkroomclient.New(darkroomclient.Options{BaseURL: cfg.DarkroomURL, Timeout: cfg.DarkroomTimeout, Logger: logger})
			app.OnStop(identity.Close)
			app.OnStop(darkroom.Close)
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: app.DB != nil}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if cfg.EventsURL != "" {
				stop, err := outbox.Start(ctx, app.DB, cfg.EventsURL, outbox.Options{Service: "pantry"}, logger)
				if err != nil {
					return nil, err
				}
				app.OnStop(stop)
			}
			deps.Service = pantry.NewService(sqlstore.New(app.DB), identity, darkroom)
			app.Go(identity.Run)
			return httpapi.NewServer(deps), nil
		},
	})
}
