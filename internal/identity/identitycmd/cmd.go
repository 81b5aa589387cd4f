// Package identitycmd wires the identity service into the platform binary:
// configuration, `identity serve`, `migrate`, `staff` and `keys`.
package identitycmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// Config is the identity service's configuration (service.Load).
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (empty serves only the probes
	// and /openapi.json), DATABASE_TIMEOUT and telemetry.
	service.Base
	// Issuer defaults to http://localhost:PORT.
	Issuer string `env:"IDENTITY_ISSUER" rule:"url"`
	// MasterKey seals the signing keys; required with DATABASE_URL, and
	// checked whenever it is set.
	MasterKey        config.Key    `env:"IDENTITY_MASTER_KEY" rule:"key32"`
	SessionTTL       time.Duration `env:"IDENTITY_SESSION_TTL, default=12h" rule:"positive"`
	LockoutThreshold int           `env:"IDENTITY_LOCKOUT_THRESHOLD, default=5" rule:"positive"`
	LockoutDuration  time.Duration `env:"IDENTITY_LOCKOUT_DURATION, default=15m" rule:"positive"`
	// MailPerAddress, MailPerUser and MailWindow bound the mail sent on a
	// caller's behalf (identity.Options).
	MailPerAddress int           `env:"IDENTITY_MAIL_PER_ADDRESS, default=3" rule:"positive"`
	MailPerUser    int           `env:"IDENTITY_MAIL_PER_USER, default=30" rule:"positive"`
	MailWindow     time.Duration `env:"IDENTITY_MAIL_WINDOW, default=1h" rule:"positive"`
	// HashConcurrency bounds the password hashes run at once, and so
	// argon2's memory (19 MiB a hash); 0 is one per core
	// (identity.DefaultHashConcurrency).
	HashConcurrency int    `env:"IDENTITY_HASH_CONCURRENCY, default=0" rule:"nonnegative"`
	EventsURL       string `env:"EVENTS_URL"`
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
	if c.DatabaseURL != "" && c.MasterKey == nil {
		return errors.New("IDENTITY_MASTER_KEY: is required whenever DATABASE_URL is set")
	}
	return nil
}

// keyRefresh is how often a running identity reloads its signing keys, so
// a rotation or withdrawal takes effect without a restart.
const keyRefresh = 500 * time.Millisecond

// Command is `platform identity`.
var Command = service.Command[Config, *Config]{
	Name:        "identity",
	Summary:     "the identity service",
	DefaultPort: 8080,
	Serve:       Serve,
	Migrate: func(ctx context.Context, databaseURL string) (int, error) {
		return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations))
	},
	Commands: map[string]func(context.Context, []string, cli.Env) error{"staff": staff, "keys": keys},
	Usage: `  staff add|remove EMAIL        mark a user as staff, or not
  keys list|rotate|withdraw KID  token-signing keys`,
}

func databaseURL(ctx context.Context, env cli.Env) (string, error) {
	var cfg struct {
		DatabaseURL string `env:"DATABASE_URL, required"`
	}
	err := config.Load(ctx, env.Getenv, &cfg)
	return cfg.DatabaseURL, err
}

// Migrate applies identity's migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := Command.Migrate(ctx, databaseURL)
	return err
}

// Serve runs the identity service on ln until ctx is done
// (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps   httpapi.Deps
		domain *identity.Metrics
	)
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "identity",
		Migrations: sqlstore.Migrations,
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: app.DB != nil}
			if app.DB != nil {
				domain = domainMetrics(app.Metrics)
				if cfg.EventsURL != "" {
					app.Metrics.Outbox(app.DB, logger)
				}
			}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			svc, ring, err := newService(ctx, cfg, app.DB, domain)
			if err != nil {
				return nil, err
			}
			if cfg.EventsURL != "" {
				stop, err := startPublisher(ctx, app.DB, cfg.EventsURL, app.Metrics, logger)
				if err != nil {
					return nil, err
				}
				app.OnStop(stop)
			}
			app.Go(func(ctx context.Context) { ring.Run(ctx, keyRefresh, logger) })
			startMailRelay(app, cfg, svc, logger)
			deps.Service = svc
			store := sqlstore.New(app.DB)
			deps.OIDCStore = store
			app.Purge("identity", func(ctx context.Context) (int64, error) { return store.PurgeSpent(ctx, cfg.MailWindow) })
			if deps.OIDC, err = oidc.New(oidc.Config{Issuer: cfg.Issuer, PublicURL: cfg.PublicURL, Service: svc, Store: deps.OIDCStore, MasterKey: cfg.MasterKey, Now: app.DB.Now, Logger: logger}); err != nil {
				return nil, fmt.Errorf("OpenID Provider: %w", err)
			}
			deps.Idempotency = app.Idempotency(cfg.MasterKey)
			return httpapi.NewServer(deps), nil
		},
	})
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
		MailPerAddress:   cfg.MailPerAddress,
		MailPerUser:      cfg.MailPerUser,
		MailWindow:       cfg.MailWindow,
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
