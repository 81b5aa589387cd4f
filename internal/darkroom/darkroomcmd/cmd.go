// Package darkroomcmd is `platform darkroom`: media (serve) and its schema
// (migrate).
package darkroomcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/httpapi"
	"github.com/platformco/platform/internal/darkroom/keyset"
	"github.com/platformco/platform/internal/darkroom/s3store"
	"github.com/platformco/platform/internal/darkroom/sqlstore"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// DefaultPort is darkroom's PORT default (platform.md).
const DefaultPort = 8080

// CheckStore is the object store's name in readiness.
const CheckStore = "store"

// Command is `platform darkroom`.
var Command = service.Command[Config, *Config]{
	Name:        "darkroom",
	Summary:     "media: uploads, variants, object storage",
	DefaultPort: DefaultPort,
	Serve:       Serve,
	Migrate: func(ctx context.Context, databaseURL string) (int, error) {
		return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations))
	},
}

// Development is the DARKROOM_ENV that admits a plain-http store (the
// embedded one of `platform dev`).
const Development = "development"

// Config is darkroom's configuration (service.Load). Every refusal is one
// line naming the variable; the secret key and the URL key are never
// printed.
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (empty serves only the probes
	// and /openapi.json), DATABASE_TIMEOUT and telemetry.
	service.Base
	// Env is DARKROOM_ENV; only development admits a store over plain
	// http (the embedded development store).
	Env string `env:"DARKROOM_ENV, default=production"`
	// IdentityIssuer is identity's issuer: tokens are verified against its
	// /.well-known/jwks.json. Empty makes every signed-in call 503.
	IdentityIssuer  string     `env:"IDENTITY_ISSUER" rule:"url"`
	Bucket          string     `env:"DARKROOM_S3_BUCKET"`
	Endpoint        string     `env:"DARKROOM_S3_ENDPOINT" rule:"url"`
	Region          string     `env:"DARKROOM_S3_REGION"`
	AccessKeyID     string     `env:"DARKROOM_S3_ACCESS_KEY_ID"`
	SecretAccessKey string     `env:"DARKROOM_S3_SECRET_ACCESS_KEY"`
	URLKey          config.Key `env:"DARKROOM_URL_KEY" rule:"key32"`
	// Variants is DARKROOM_VARIANTS (darkroom.DefaultVariants when empty).
	Variants       string `env:"DARKROOM_VARIANTS"`
	MaxUploadBytes int64  `env:"DARKROOM_MAX_UPLOAD_BYTES, default=26214400" rule:"positive"`
	MaxDirectBytes int64  `env:"DARKROOM_MAX_DIRECT_BYTES, default=8388608" rule:"positive"`
	QuotaBytes     int64  `env:"DARKROOM_USER_QUOTA_BYTES, default=1073741824" rule:"positive"`
	MaxPixels      int64  `env:"DARKROOM_MAX_PIXELS, default=40000000" rule:"positive"`
	// VariantCacheBytes bounds the stored variants kept in memory; 0
	// keeps none.
	VariantCacheBytes int64 `env:"DARKROOM_VARIANT_CACHE_BYTES, default=33554432" rule:"nonnegative"`

	presets map[string]darkroom.Preset
}

// Validate implements config.Validator: platform.md's rule that the store
// settings resolve (a custom endpoint takes region auto; auto needs an
// endpoint), a bucket, both keys or neither, the presets.
func (c *Config) Validate() error {
	if c.Env != Development && c.Env != "production" {
		return fmt.Errorf("DARKROOM_ENV: must be production or development, got %q", c.Env)
	}
	if c.Bucket == "" {
		return errors.New("DARKROOM_S3_BUCKET: is required")
	}
	if c.Endpoint != "" {
		u, _ := url.Parse(c.Endpoint)
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return errors.New("DARKROOM_S3_ENDPOINT: is a base URL with no path (the bucket is DARKROOM_S3_BUCKET)")
		}
		if u.Scheme == "http" && c.Env != Development {
			return errors.New("DARKROOM_S3_ENDPOINT: plain http is the embedded development store's and is allowed only with DARKROOM_ENV=development; use https")
		}
		switch c.Region {
		case "":
			c.Region = s3store.RegionAuto
		case s3store.RegionAuto:
		default:
			return fmt.Errorf("DARKROOM_S3_REGION: a custom endpoint takes region auto, got %q (unset it, or unset DARKROOM_S3_ENDPOINT for AWS S3)", c.Region)
		}
	} else {
		switch c.Region {
		case "":
			return errors.New("DARKROOM_S3_REGION: is required for AWS S3 (or set DARKROOM_S3_ENDPOINT for another S3-compatible store)")
		case s3store.RegionAuto:
			return errors.New("DARKROOM_S3_REGION: auto is for a custom endpoint; set DARKROOM_S3_ENDPOINT or a real region")
		}
		if !regionPattern(c.Region) {
			return fmt.Errorf("DARKROOM_S3_REGION: is not a region such as eu-west-1, got %q", c.Region)
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return errors.New("DARKROOM_S3_ACCESS_KEY_ID: and DARKROOM_S3_SECRET_ACCESS_KEY are both set or neither")
	}
	variants := c.Variants
	if variants == "" {
		variants = darkroom.DefaultVariants
	}
	ps, err := darkroom.ParsePresets(variants)
	if err != nil {
		return fmt.Errorf("DARKROOM_VARIANTS: %v", err)
	}
	c.presets = ps
	if c.MaxDirectBytes > c.MaxUploadBytes {
		return errors.New("DARKROOM_MAX_DIRECT_BYTES: must not exceed DARKROOM_MAX_UPLOAD_BYTES")
	}
	return nil
}

// variantCache is DARKROOM_VARIANT_CACHE_BYTES as the service's option:
// 0 keeps none (the option's 0 is its default).
func variantCache(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// regionPattern reports whether r looks like an AWS region (us-east-1).
func regionPattern(r string) bool {
	parts := strings.Split(r, "-")
	if len(parts) < 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return false
		}
	}
	return true
}

// SweepInterval is how often uploads never completed are swept.
const SweepInterval = time.Hour

// Serve runs darkroom on ln until ctx is done (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	if cfg.presets == nil {
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	var (
		deps     httpapi.Deps
		verifier *keyset.Verifier
		objects  *s3store.Store
	)
	engine := "none"
	if e, _, err := sqldb.ParseURL(cfg.DatabaseURL); err == nil && cfg.DatabaseURL != "" {
		engine = string(e)
	}
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "darkroom",
		Migrations: sqlstore.Migrations,
		Render:     service.NamedDeps(map[string]string{"engine": engine}),
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if cfg.IdentityIssuer == "" {
				logger.WarnContext(ctx, "IDENTITY_ISSUER is empty: every signed-in call answers 503")
			}
			if len(cfg.URLKey) == 0 {
				logger.WarnContext(ctx, "DARKROOM_URL_KEY is empty: links to private media cannot be signed")
			}
			var err error
			objects, err = s3store.New(s3store.Options{Endpoint: cfg.Endpoint, Region: cfg.Region, Bucket: cfg.Bucket,
				AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey})
			if err != nil {
				return nil, fmt.Errorf("DARKROOM_S3_ENDPOINT: %w", err)
			}
			app.Ready.Add(service.Check{Name: CheckStore, Check: objects.Ready})
			verifier = keyset.New(keyset.Options{Issuer: cfg.IdentityIssuer, Logger: logger})
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: app.DB != nil}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			svc := darkroom.NewService(darkroom.Options{Store: sqlstore.New(app.DB), Objects: objects, Identity: verifier,
				Presets: cfg.presets, MaxUploadBytes: cfg.MaxUploadBytes, MaxDirectBytes: cfg.MaxDirectBytes,
				QuotaBytes: cfg.QuotaBytes, MaxPixels: cfg.MaxPixels, URLKey: cfg.URLKey, Logger: logger,
				VariantCacheBytes: variantCache(cfg.VariantCacheBytes)})
			deps.Service = svc
			app.Go(verifier.Run)
			app.Go(func(ctx context.Context) { sweep(ctx, svc, logger) })
			return httpapi.NewServer(deps), nil
		},
	})
}

// sweep removes uploads never completed, now and every SweepInterval.
func sweep(ctx context.Context, svc *darkroom.Service, logger *slog.Logger) {
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	for {
		if n, err := svc.Sweep(ctx); err != nil && ctx.Err() == nil {
			logger.WarnContext(ctx, "uploads: sweep failed", "err", err.Error())
		} else if n > 0 {
			logger.InfoContext(ctx, "uploads: abandoned uploads swept", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
