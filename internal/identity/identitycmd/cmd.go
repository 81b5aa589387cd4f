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
	"text/tabwriter"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/debugsrv"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
)

// Config is the identity service's configuration.
type Config struct {
	Port             int
	DatabaseURL      string
	Issuer           string
	MasterKey        []byte
	SessionTTL       time.Duration
	LockoutThreshold int
	LockoutDuration  time.Duration
	HashConcurrency  int
	EventsURL        string
	// KeyRefresh is how often a running identity reloads its signing keys,
	// so a rotation or withdrawal takes effect without a restart.
	KeyRefresh time.Duration
	// DebugAddr (DEBUG_ADDR, loopback only) serves the profiling endpoints.
	DebugAddr string
}

// LoadConfig reads and validates the configuration; the error names the
// variable and the rule.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := config.New(getenv)
	c := Config{
		Port:             r.Port("PORT", 8080),
		DatabaseURL:      r.String("DATABASE_URL", ""),
		SessionTTL:       r.Duration("IDENTITY_SESSION_TTL", 12*time.Hour),
		LockoutThreshold: r.PositiveInt("IDENTITY_LOCKOUT_THRESHOLD", 5),
		LockoutDuration:  r.Duration("IDENTITY_LOCKOUT_DURATION", 15*time.Minute),
		HashConcurrency:  r.NonNegativeInt("IDENTITY_HASH_CONCURRENCY", 0),
		EventsURL:        r.String("EVENTS_URL", ""),
		KeyRefresh:       500 * time.Millisecond,
		DebugAddr:        r.LoopbackAddr("DEBUG_ADDR"),
	}
	c.Issuer = r.String("IDENTITY_ISSUER", "http://localhost:"+strconv.Itoa(c.Port))
	if c.DatabaseURL != "" {
		r.Require("IDENTITY_MASTER_KEY", "whenever DATABASE_URL is set")
		c.MasterKey = r.Key32("IDENTITY_MASTER_KEY")
	}
	if err := r.Err(); err != nil {
		return Config{}, err
	}
	if c.DatabaseURL != "" {
		if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
			return Config{}, fmt.Errorf("DATABASE_URL: %v", err)
		}
	}
	return c, nil
}

// Run runs `platform identity …`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("identity: expected serve, migrate, staff or keys")
	}
	switch args[0] {
	case "serve":
		cfg, err := LoadConfig(env.Getenv)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return err
		}
		return Serve(ctx, cfg, env.Logger("identity"), ln)
	case "migrate":
		url, err := databaseURL(env)
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

func databaseURL(env cli.Env) (string, error) {
	r := config.New(env.Getenv)
	r.Require("DATABASE_URL", "for this command")
	if err := r.Err(); err != nil {
		return "", err
	}
	return r.String("DATABASE_URL", ""), nil
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

// Serve runs the identity service on ln until ctx is done.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	if cfg.DebugAddr != "" {
		_, stopDebug, err := debugsrv.Start(ctx, cfg.DebugAddr, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("DEBUG_ADDR: %w", err)
		}
		defer stopDebug()
	}
	deps := httpapi.Deps{Logger: logger, Ready: func(context.Context) httpx.Readiness {
		return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": "none"}}
	}}
	if cfg.DatabaseURL != "" {
		db, err := sqldb.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		defer db.Close()
		if pending, err := db.Pending(ctx, sqlstore.Migrations); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		} else if pending {
			return errors.New("the database schema is not current: run `platform identity migrate` first")
		}
		svc, ring, err := newService(ctx, cfg, db)
		if err != nil {
			return err
		}
		go ring.Run(ctx, cfg.KeyRefresh, logger)
		deps.Service = svc
		deps.Idempotency = idempotency.New(db)
		go purgeIdempotency(ctx, deps.Idempotency, logger)
		deps.Ready = func(ctx context.Context) httpx.Readiness {
			if err := db.Ready(ctx); err != nil {
				logger.Warn("readiness: database unavailable", "err", err)
				return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": string(db.Engine)}}
			}
			return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": string(db.Engine)}}
		}
		if cfg.EventsURL != "" {
			stop, err := startPublisher(ctx, db, cfg.EventsURL, logger)
			if err != nil {
				return err
			}
			defer stop()
		}
	}
	return httpx.Serve(ctx, ln, httpapi.NewHandler(deps), logger)
}

func newService(ctx context.Context, cfg Config, db *sqldb.DB) (*identity.Service, *identity.KeyRing, error) {
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
	svc := identity.NewService(store, hasher, ring, identity.Options{
		Issuer:           cfg.Issuer,
		SessionTTL:       cfg.SessionTTL,
		LockoutThreshold: cfg.LockoutThreshold,
		LockoutDuration:  cfg.LockoutDuration,
		Now:              db.Now,
	})
	return svc, ring, nil
}

func staff(ctx context.Context, args []string, env cli.Env) error {
	if len(args) != 2 || (args[0] != "add" && args[0] != "remove") {
		return cli.Usagef("identity staff: expected add EMAIL or remove EMAIL")
	}
	url, err := databaseURL(env)
	if err != nil {
		return err
	}
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	email := identity.NormalizeEmail(args[1])
	if err := sqlstore.New(db).SetStaff(ctx, email, args[0] == "add"); err != nil {
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

func keys(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 || (args[0] == "withdraw" && len(args) != 2) || (args[0] != "withdraw" && len(args) != 1) {
		return cli.Usagef("identity keys: expected list, rotate or withdraw KID")
	}
	if args[0] != "list" && args[0] != "rotate" && args[0] != "withdraw" {
		return cli.Usagef("identity keys: unknown command %q", args[0])
	}
	url, err := databaseURL(env)
	if err != nil {
		return err
	}
	r := config.New(env.Getenv)
	r.Require("IDENTITY_MASTER_KEY", "to manage signing keys")
	master := r.Key32("IDENTITY_MASTER_KEY")
	if err := r.Err(); err != nil {
		return err
	}
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
