// Package keyholdercmd is `platform keyholder`: the registry-credential
// exchange and its registry front (serve), its schema (migrate) and the
// operator's publish command.
package keyholdercmd

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/identity/client"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/boxclient"
	"github.com/platformco/platform/internal/keyholder/httpapi"
	"github.com/platformco/platform/internal/keyholder/registry"
	"github.com/platformco/platform/internal/keyholder/sqlstore"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// Command is `platform keyholder`.
var Command = service.Command[Config, *Config]{
	Name:        "keyholder",
	Summary:     "the registry-credential exchange and its /v2 front",
	DefaultPort: 8084,
	Serve:       Serve,
	Migrate:     migrate,
	Commands:    map[string]func(context.Context, []string, cli.Env) error{"publish": runPublish},
	Usage: `  publish --repository R --version X.Y.Z DIR_OR_TARBALL
             push an OCI layout directory or an image tarball to
             KEYHOLDER_REGISTRY_URL and publish the release at BOX_URL
             with the staff token in PLATFORM_TOKEN: a staff session,
             or a pipeline's staff key (plat_…, scope releases:publish)
  publish --repository R --version X.Y.Z --files FILE...
             the same with files customers download in a browser (an
             ORAS artifact, one titled layer per file)`,
}

// Serve runs keyholder on ln until ctx is done (service.Serve). Readiness
// names the database, box and the upstream registry.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		obs      observed
		box      *boxclient.Client
		identity *client.Client
		upstream *registry.Upstream
	)
	engine, _, _ := sqldb.ParseURL(cfg.DatabaseURL) // Validate has parsed it
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "keyholder",
		Migrations: sqlstore.Migrations,
		Render:     service.NamedDeps(map[string]string{"engine": string(engine)}),
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			obs = newObserved(app.Metrics)
			box = boxclient.New(cfg.BoxURL, 0, logger)
			app.OnStop(box.Close)
			if cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "KEYHOLDER_IDENTITY_URL is empty: GET /v1/accounts/{id}/pulls answers 503")
			}
			identity = httpapi.NewIdentity(cfg.IdentityURL, cfg.IdentityTimeout, logger)
			app.OnStop(identity.Close)
			upstream = registry.NewUpstream(cfg.RegistryURL, cfg.RegistryUsername, cfg.RegistryPassword)
			app.OnStop(upstream.Close)
			app.Ready.Add(service.Check{Name: "box", Check: box.Ready})
			app.Ready.Add(service.Check{Name: "registry", Check: upstream.Ready})
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: true, Realm: cfg.PublicHost, Identity: identity,
				Box: box, Files: upstream}
			return httpapi.NewServer(deps), nil
		},
		Open: func(_ context.Context, app *service.App) (http.Handler, error) {
			deps.Service = keyholder.NewService(obs.store(sqlstore.New(app.DB)), obs.box(box), cfg.CredentialTTL, cfg.PublicHost)
			deps.Front = registry.New(deps.Service, upstream, cfg.PublicHost, logger)
			return httpapi.NewServer(deps), nil
		},
		Wrap: func(h http.Handler) http.Handler { return obs.streaming(h) },
	})
}

// Migrate applies keyholder's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

func migrate(ctx context.Context, databaseURL string) (int, error) {
	return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations))
}
