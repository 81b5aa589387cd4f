// Package musecmd is `platform muse`: the OpenAI-compatible endpoint, the
// provider-key vault and metering (serve), and its schema (migrate). Its
// outbox is published by `platform events publish --service muse`.
package musecmd

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/httpapi"
	"github.com/platformco/platform/internal/muse/identityclient"
	"github.com/platformco/platform/internal/muse/providers"
	"github.com/platformco/platform/internal/muse/sqlstore"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// DefaultPort is muse's PORT default (platform.md).
const DefaultPort = 8000

// Command is `platform muse`.
var Command = service.Command[Config, *Config]{
	Name:        "muse",
	Summary:     "model routing, the provider-credential vault, token metering",
	DefaultPort: DefaultPort,
	Serve:       Serve,
	Migrate: func(ctx context.Context, databaseURL string) (int, error) {
		return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations))
	},
}

// Config is muse's configuration (service.Load).
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (empty serves only the probes
	// and /openapi.json), DATABASE_TIMEOUT and telemetry.
	service.Base
	// VaultKey seals provider credentials: the base64 of exactly 32
	// bytes, required (platform.md). A changed key leaves stored
	// credentials unreadable (401 provider_credential_unreadable).
	VaultKey config.Key `env:"MUSE_VAULT_KEY" rule:"key32"`
	// Env is MUSE_ENV; only "development" admits the echo provider.
	Env string `env:"MUSE_ENV, default=production" rule:"oneof=production development"`
	// EchoAlias is the alias every account has, answered by the echo
	// provider (development only); empty for none.
	EchoAlias string `env:"MUSE_ECHO_ALIAS"`
	// IdentityIssuer is identity's issuer: tokens are verified against its
	// /.well-known/jwks.json. Empty makes every signed-in call 503.
	IdentityIssuer string `env:"IDENTITY_ISSUER" rule:"url"`
	// IdentityURL is where memberships are asked; empty makes every call
	// 503 (failing closed).
	IdentityURL     string        `env:"MUSE_IDENTITY_URL" rule:"url"`
	IdentityTimeout time.Duration `env:"MUSE_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	// UpstreamTimeout bounds the wait for a provider's first byte; past it
	// the next target is tried.
	UpstreamTimeout time.Duration `env:"MUSE_UPSTREAM_TIMEOUT, default=60s" rule:"positive"`
	// MaxRequestBytes bounds a chat request's body (413 beyond).
	MaxRequestBytes int64 `env:"MUSE_MAX_REQUEST_BYTES, default=4194304" rule:"positive"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	if len(c.VaultKey) == 0 {
		return errors.New("MUSE_VAULT_KEY: is required (the base64 encoding of exactly 32 random bytes; it seals provider credentials)")
	}
	if c.EchoAlias != "" && c.Env != "development" {
		return errors.New("MUSE_ECHO_ALIAS: the echo provider is for development only; set MUSE_ENV=development or leave it empty")
	}
	c.IdentityURL = strings.TrimRight(c.IdentityURL, "/")
	return nil
}

// transport is the providers' HTTP client: a stock transport, configured,
// with no overall timeout (streams last); the first byte is bounded by
// MUSE_UPSTREAM_TIMEOUT.
func transport() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: t}
}

// Serve runs muse on ln until ctx is done (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		identity *identityclient.Client
		vault    *seal.Sealer
	)
	engine := "none"
	if e, _, err := sqldb.ParseURL(cfg.DatabaseURL); err == nil && cfg.DatabaseURL != "" {
		engine = string(e)
	}
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "muse",
		Migrations: sqlstore.Migrations,
		Render:     service.NamedDeps(map[string]string{"engine": engine}),
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if cfg.IdentityIssuer == "" || cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "IDENTITY_ISSUER or MUSE_IDENTITY_URL is empty: every call answers 503")
			}
			var err error
			if vault, err = seal.New(cfg.VaultKey); err != nil {
				return nil, errors.New("MUSE_VAULT_KEY: " + err.Error())
			}
			identity = identityclient.New(identityclient.Options{Issuer: cfg.IdentityIssuer, BaseURL: cfg.IdentityURL,
				Timeout: cfg.IdentityTimeout, Logger: logger})
			app.OnStop(identity.Close)
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: app.DB != nil, MaxRequestBytes: cfg.MaxRequestBytes}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			client := transport()
			ps := map[string]muse.Provider{
				muse.ProviderOpenAI:    &providers.OpenAI{Client: client},
				muse.ProviderAnthropic: &providers.Anthropic{Client: client},
			}
			if cfg.EchoAlias != "" {
				ps[muse.ProviderEcho] = providers.Echo{}
			}
			deps.Service = muse.NewService(sqlstore.New(app.DB), identity, vault, muse.Options{Providers: ps,
				EchoAlias: cfg.EchoAlias, UpstreamTimeout: cfg.UpstreamTimeout, Logger: logger})
			app.Go(identity.Run)
			return httpapi.NewServer(deps), nil
		},
	})
}
