// Package keyholdercmd is `platform keyholder`: the registry-credential
// exchange and its registry front (serve), its schema (migrate) and the
// operator's publish command.
package keyholdercmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/boxclient"
	"github.com/platformco/platform/internal/keyholder/httpapi"
	"github.com/platformco/platform/internal/keyholder/registry"
	"github.com/platformco/platform/internal/keyholder/sqlstore"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
)

const usage = `usage: platform keyholder <command>

  serve      run the registry-credential exchange and its /v2 front
  migrate    apply keyholder's schema migrations to DATABASE_URL
  publish --repository R --version X.Y.Z DIR_OR_TARBALL
             push an OCI layout directory or an image tarball to
             KEYHOLDER_REGISTRY_URL and publish the release at BOX_URL
             with the staff token in PLATFORM_TOKEN`

// Run runs a `platform keyholder` subcommand.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("keyholder: no subcommand given\n%s", usage)
	}
	switch args[0] {
	case "serve":
		if len(args) > 1 {
			return cli.Usagef("keyholder serve takes no arguments")
		}
		var cfg Config
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
		}
		return Serve(ctx, cfg, env.Logger("keyholder"), ln)
	case "migrate":
		if len(args) > 1 {
			return cli.Usagef("keyholder migrate takes no arguments")
		}
		n, err := migrate(ctx, env.Getenv("DATABASE_URL"))
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "keyholder: applied %d migration(s)\n", n)
		return nil
	case "publish":
		return runPublish(ctx, args[1:], env)
	case "help", "-h", "--help":
		fmt.Fprintln(env.Stdout, usage)
		return nil
	default:
		return cli.Usagef("keyholder: unknown subcommand %q\n%s", args[0], usage)
	}
}

// Serve runs keyholder on ln until ctx is done. It does not migrate: a
// schema that is behind stops it with a line naming the migrate command;
// while the database does not answer it serves 503 until it does
// (sqldb.Gate).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	db, err := sqldb.New(cfg.DatabaseURL, sqldb.Options{Timeout: cfg.DatabaseTimeout})
	if err != nil {
		ln.Close()
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "keyholder", logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopTelemetry()
	metrics.Database(db.DB, "keyholder")
	observe.Statements(db, metrics, tracing)
	obs := newObserved(metrics)
	box := boxclient.New(cfg.BoxURL, 0, logger)
	defer box.Close()
	if cfg.IdentityURL == "" {
		logger.WarnContext(ctx, "KEYHOLDER_IDENTITY_URL is empty: GET /v1/accounts/{id}/pulls answers 503")
	}
	identity := httpapi.NewIdentity(cfg.IdentityURL, cfg.IdentityTimeout, logger)
	defer identity.Close()
	upstream := registry.NewUpstream(cfg.RegistryURL, cfg.RegistryUsername, cfg.RegistryPassword)
	defer upstream.Close()
	gate := sqldb.NewGate(db, sqlstore.Migrations, "platform keyholder migrate")
	deps := httpapi.Deps{Logger: logger, Ready: Readiness(gate, db.Engine, box, upstream, logger), Waiting: true, Realm: cfg.PublicHost, Identity: identity}
	h := httpx.NewSwitch(httpapi.NewServer(deps))
	err = gate.Start(ctx, time.Second, logger, func(context.Context) error {
		deps.Service = keyholder.NewService(obs.store(sqlstore.New(db)), obs.box(box), cfg.CredentialTTL, cfg.PublicHost)
		deps.Front = registry.New(deps.Service, upstream, cfg.PublicHost, logger)
		h.Set(httpapi.NewServer(deps))
		return nil
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("keyholder: %w", err)
	}
	return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(obs.streaming(h))), logger)
}

// Readiness is ready while the database answers with its schema current
// (gate), box's readiness answers and the upstream registry answers GET
// /v2/. The body names each, never why.
func Readiness(gate *sqldb.Gate, engine sqldb.Engine, box *boxclient.Client, upstream *registry.Upstream, logger *slog.Logger) func(context.Context) httpx.Readiness {
	state := func(err error) string {
		if err != nil {
			return "unavailable"
		}
		return "ok"
	}
	return func(ctx context.Context) httpx.Readiness {
		var dbErr error
		if st := gate.Status(ctx); st != "ok" {
			dbErr = errors.New(st)
		}
		boxErr := box.Ready(ctx)
		regErr := upstream.Ready(ctx)
		for name, err := range map[string]error{"database": dbErr, "box": boxErr, "registry": regErr} {
			if err != nil {
				logger.WarnContext(ctx, "readiness: dependency unavailable", "dep", name, "err", err.Error())
			}
		}
		ready := dbErr == nil && boxErr == nil && regErr == nil
		return httpx.Readiness{Ready: ready, Body: map[string]any{
			"status": map[bool]string{true: "ok", false: "unavailable"}[ready],
			"engine": string(engine),
			"deps":   map[string]string{"database": state(dbErr), "box": state(boxErr), "registry": state(regErr)},
		}}
	}
}

// Migrate applies keyholder's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

func migrate(ctx context.Context, databaseURL string) (int, error) {
	if databaseURL == "" {
		return 0, errors.New("DATABASE_URL: is required to migrate")
	}
	if _, _, err := sqldb.ParseURL(databaseURL); err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %v", err)
	}
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	return db.Migrate(ctx, sqlstore.Migrations)
}
