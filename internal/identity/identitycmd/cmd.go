// Package identitycmd wires the identity service into the platform binary:
// configuration, `identity serve`, `migrate`, `staff` and `keys`.
package identitycmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
)

// Config is the identity service's configuration (config.Load).
type Config struct {
	Port int `env:"PORT, default=8080" rule:"port"`
	// DatabaseURL empty serves only the probes and /openapi.json.
	DatabaseURL string `env:"DATABASE_URL"`
	// DatabaseTimeout bounds every call's database work (sqldb.Options).
	DatabaseTimeout time.Duration `env:"DATABASE_TIMEOUT, default=5s" rule:"positive"`
	// Issuer defaults to http://localhost:PORT.
	Issuer string `env:"IDENTITY_ISSUER" rule:"url"`
	// MasterKey seals the signing keys; required with DATABASE_URL, and
	// checked whenever it is set.
	MasterKey        config.Key    `env:"IDENTITY_MASTER_KEY" rule:"key32"`
	SessionTTL       time.Duration `env:"IDENTITY_SESSION_TTL, default=12h" rule:"positive"`
	LockoutThreshold int           `env:"IDENTITY_LOCKOUT_THRESHOLD, default=5" rule:"positive"`
	LockoutDuration  time.Duration `env:"IDENTITY_LOCKOUT_DURATION, default=15m" rule:"positive"`
	// HashConcurrency bounds the password hashes run at once; 0 is half
	// the cores (identity.DefaultHashConcurrency).
	HashConcurrency int    `env:"IDENTITY_HASH_CONCURRENCY, default=0" rule:"nonnegative"`
	EventsURL       string `env:"EVENTS_URL"`
	// Telemetry is DEBUG_ADDR, METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT.
	observe.Telemetry
	LogLevel slog.Level `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
	// PublicURL is where the web app's pages for emailed links live;
	// empty means the issuer.
	PublicURL string `env:"IDENTITY_PUBLIC_URL" rule:"url"`
	// CourierURL and CourierToken (identity:<secret>) let the relay hand
	// mail to courier; unset, mail waits in identity's database.
	CourierURL   string `env:"IDENTITY_COURIER_URL" rule:"url"`
	CourierToken string `env:"IDENTITY_COURIER_TOKEN"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	if c.Issuer == "" {
		c.Issuer = "http://localhost:" + strconv.Itoa(c.Port)
	}
	c.Issuer = strings.TrimRight(c.Issuer, "/")
	if err := c.validateCourier(); err != nil {
		return err
	}
	if c.DatabaseURL == "" {
		return nil
	}
	if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %v", err)
	}
	if c.MasterKey == nil {
		return errors.New("IDENTITY_MASTER_KEY: is required whenever DATABASE_URL is set")
	}
	return nil
}

// keyRefresh is how often a running identity reloads its signing keys, so
// a rotation or withdrawal takes effect without a restart.
const keyRefresh = 500 * time.Millisecond

// Run runs `platform identity …`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("identity: expected serve, migrate, staff or keys")
	}
	switch args[0] {
	case "serve":
		var cfg Config
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return err
		}
		return Serve(ctx, cfg, env.Logger("identity"), ln)
	case "migrate":
		url, err := databaseURL(ctx, env)
		if err != nil {
			return err
		}
		return Migrate(ctx, url, env)
	case "staff":
		return staff(ctx, args[1:], env)
	case "keys":
		return keys(ctx, args[1:], env)
	default:
		return cli.Usagef("identity: unknown command %q", args[0])
	}
}

func databaseURL(ctx context.Context, env cli.Env) (string, error) {
	var cfg struct {
		DatabaseURL string `env:"DATABASE_URL, required"`
	}
	err := config.Load(ctx, env.Getenv, &cfg)
	return cfg.DatabaseURL, err
}

// Migrate applies identity's migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string, env cli.Env) error {
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Migrate(ctx, sqlstore.Migrations)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "identity: %d migration(s) applied; schema is current\n", n)
	return nil
}

// Serve runs the identity service on ln until ctx is done. It does not
// migrate: it stops when the schema is behind, and while the database does
// not answer it serves 503 until it does (sqldb.Gate).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "identity", logger)
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
	metrics.Database(db.DB, "identity")
	observe.Statements(db, metrics, tracing)
	domain := domainMetrics(metrics)
	if cfg.EventsURL != "" {
		metrics.Outbox(db, logger)
	}
	gate := sqldb.NewGate(db, sqlstore.Migrations, "platform identity migrate")
	deps := httpapi.Deps{Logger: logger, Ready: httpx.DatabaseReadiness(gate, db.Engine), Waiting: true}
	h := httpx.NewSwitch(httpapi.NewServer(deps))
	var stopPublisher func()
	defer func() {
		if stopPublisher != nil {
			stopPublisher()
		}
	}()
	err = gate.Start(ctx, time.Second, logger, func(ctx context.Context) error {
		svc, ring, err := newService(ctx, cfg, db, domain)
		if err != nil {
			return err
		}
		if cfg.EventsURL != "" {
			if stopPublisher, err = startPublisher(ctx, db, cfg.EventsURL, metrics, logger); err != nil {
				return err
			}
		}
		go ring.Run(ctx, keyRefresh, logger)
		startMailRelay(ctx, cfg, db, svc, logger)
		deps.Service = svc
		deps.OIDCStore = sqlstore.New(db)
		if deps.OIDC, err = oidc.New(oidc.Config{Issuer: cfg.Issuer, PublicURL: cfg.PublicURL, Service: svc, Store: deps.OIDCStore, MasterKey: cfg.MasterKey, Now: db.Now, Logger: logger}); err != nil {
			return fmt.Errorf("OpenID Provider: %w", err)
		}
		deps.Idempotency = idempotency.New(db, cfg.MasterKey)
		go purgeIdempotency(ctx, deps.Idempotency, logger)
		h.Set(httpapi.NewServer(deps))
		return nil
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("identity: %w", err)
	}
	return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(h)), logger)
}

func newService(ctx context.Context, cfg Config, db *sqldb.DB, m *identity.Metrics) (*identity.Service, *identity.KeyRing, error) {
	store := sqlstore.New(db)
	keys, err := identity.NewKeys(store, cfg.MasterKey)
	if err != nil {
		return nil, nil, fmt.Errorf("IDENTITY_MASTER_KEY: %w", err)
	}
	ring := identity.NewKeyRing(keys)
	if err := ring.Refresh(ctx); err != nil {
		return nil, nil, fmt.Errorf("signing keys: %w", err)
	}
	hasher := identity.NewHasher(identity.DefaultHashParams, cfg.HashConcurrency)
	hasher.Observe(m)
	svc := identity.NewService(store, hasher, ring, identity.Options{
		Issuer:           cfg.Issuer,
		SessionTTL:       cfg.SessionTTL,
		LockoutThreshold: cfg.LockoutThreshold,
		LockoutDuration:  cfg.LockoutDuration,
		Now:              db.Now,
		PublicURL:        cfg.PublicURL,
		MasterKey:        cfg.MasterKey,
		Metrics:          m,
	})
	return svc, ring, nil
}

func staff(ctx context.Context, args []string, env cli.Env) error {
	if len(args) != 2 || (args[0] != "add" && args[0] != "remove") {
		return cli.Usagef("identity staff: expected add EMAIL or remove EMAIL")
	}
	url, err := databaseURL(ctx, env)
	if err != nil {
		return err
	}
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	email := identity.NormalizeEmail(args[1])
	if err := sqlstore.New(db).SetStaff(ctx, email, args[0] == "add", staffActor(env)); err != nil {
		if errs.Code(err) == identity.CodeNotFound {
			return fmt.Errorf("no user is registered as %s", email)
		}
		return err
	}
	if args[0] == "add" {
		fmt.Fprintf(env.Stdout, "%s is now staff\n", email)
	} else {
		fmt.Fprintf(env.Stdout, "%s is no longer staff\n", email)
	}
	return nil
}

// staffActor names who ran `identity staff` in the audit trail: the
// command line, and the operating-system account when the environment
// says (the command has no signed-in user).
func staffActor(env cli.Env) string {
	if u := strings.TrimSpace(env.Getenv("USER")); u != "" {
		return "cli:" + u
	}
	return "cli"
}

func keys(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 || (args[0] == "withdraw" && len(args) != 2) || (args[0] != "withdraw" && len(args) != 1) {
		return cli.Usagef("identity keys: expected list, rotate or withdraw KID")
	}
	if args[0] != "list" && args[0] != "rotate" && args[0] != "withdraw" {
		return cli.Usagef("identity keys: unknown command %q", args[0])
	}
	var cfg struct {
		DatabaseURL string     `env:"DATABASE_URL, required"`
		MasterKey   config.Key `env:"IDENTITY_MASTER_KEY, required" rule:"key32"`
	}
	if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	url, master := cfg.DatabaseURL, cfg.MasterKey
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	k, err := identity.NewKeys(sqlstore.New(db), master)
	if err != nil {
		return err
	}
	switch args[0] {
	case "rotate":
		key, err := k.Rotate(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s is now the signing key; earlier keys stay published until withdrawn\n", key.KID)
		return nil
	case "withdraw":
		if err := k.Withdraw(ctx, args[1]); err != nil {
			if e, ok := errs.As(err); ok {
				return errors.New(e.Message)
			}
			return err
		}
		fmt.Fprintf(env.Stdout, "%s is withdrawn; tokens it signed are refused\n", args[1])
		return nil
	default:
		list, err := k.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KID\tALGORITHM\tCREATED\tSTATE")
		signer := true
		for _, key := range list {
			state := "published"
			switch {
			case key.WithdrawnAt != nil:
				state = "withdrawn " + key.WithdrawnAt.Format(time.RFC3339)
			case signer:
				state, signer = "signing", false
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", key.KID, key.Algorithm, key.CreatedAt.Format(time.RFC3339), state)
		}
		return tw.Flush()
	}
}

// purgeIdempotency deletes expired Idempotency-Key records hourly.
func purgeIdempotency(ctx context.Context, s *idempotency.Store, logger *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("idempotency: purge failed", "err", err)
			}
		}
	}
}
