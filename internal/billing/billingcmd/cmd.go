// Package billingcmd is `platform billing`: the configuration, `serve`
// (the HTTP API and, with EVENTS_URL, the outbox publisher), `migrate`
// and `plans seed`.
package billingcmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/boxclient"
	"github.com/platformco/platform/internal/billing/httpapi"
	"github.com/platformco/platform/internal/billing/museusage"
	"github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/billing/testproc"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// Command is `platform billing`.
var Command = service.Command[Config, *Config]{
	Name:        "billing",
	Summary:     "the billing service (plans, checkout, processor webhooks)",
	DefaultPort: 3000,
	Serve:       Serve,
	Migrate: func(ctx context.Context, databaseURL string) (int, error) {
		return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations), consumer.Migrate)
	},
	Commands: map[string]func(context.Context, []string, cli.Env) error{"plans": runPlans},
	Usage:    "  plans seed create entitlements.md's four one-time plans (DATABASE_URL, BILLING_PROCESSOR)\n",
}

// Processor builds the configured processor: the Stripe adapter, or the
// test processor (development only, as Validate enforces) whose hosted
// page is billing's own at publicURL.
func Processor(cfg Config, publicURL string, logger *slog.Logger) (billing.Processor, *testproc.Processor) {
	if cfg.Processor == ProcessorTest {
		tp := testproc.New(testproc.Options{PublicURL: publicURL, WebhookSecret: cfg.StripeWebhookSecret, Logger: logger})
		return tp, tp
	}
	return stripeproc.New(stripeproc.Options{SecretKey: cfg.StripeSecretKey, APIURL: cfg.StripeAPIURL, Logger: logger}), nil
}

// Serve runs billing on ln until ctx is done (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		identity httpapi.Identity
		proc     billing.Processor
	)
	self := "http://" + ln.Addr().String()
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:       "billing",
		Migrations: sqlstore.Migrations,
		Render:     service.ChecksBody,
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			identity = httpapi.NewIdentity(cfg.IdentityURL, cfg.IdentityTimeout, logger)
			app.OnStop(identity.Close)
			if cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "BILLING_IDENTITY_URL is empty: every signed-in call answers 503")
			}
			if cfg.BoxURL == "" {
				logger.WarnContext(ctx, "BILLING_BOX_URL is empty: every grant and revoke answers 503")
			}
			var tp *testproc.Processor
			proc, tp = Processor(cfg, self, logger)
			deps = httpapi.Deps{Logger: logger, Ready: app.Ready.Probe, Waiting: true, WebhookSecret: cfg.StripeWebhookSecret,
				ServiceTokens: cfg.serviceTokens}
			if len(cfg.serviceTokens) == 0 {
				logger.WarnContext(ctx, "BILLING_SERVICE_TOKENS is empty: POST /v1/usage answers 401")
			}
			if tp != nil {
				tp.SetWebhookURL(self + "/v1/webhooks/stripe")
				deps.DevCheckout = tp.Handler()
				logger.WarnContext(ctx, "BILLING_PROCESSOR=test: the hosted test checkout takes no money (development only)")
			}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if cfg.EventsURL != "" {
				stop, err := outbox.Start(ctx, app.DB, cfg.EventsURL, outbox.Options{Service: "billing"}, logger)
				if err != nil {
					return nil, err
				}
				app.OnStop(stop)
			}
			store := sqlstore.New(app.DB)
			if cfg.CourierURL == "" {
				logger.WarnContext(ctx, "BILLING_COURIER_URL is empty: receipts wait queued")
			}
			mail := &billing.MailRelay{Store: store, URL: cfg.CourierURL, Token: cfg.CourierToken, PublicURL: cfg.PublicURL, Logger: logger}
			app.Go(func(ctx context.Context) { mail.Run(ctx, 2*time.Second) })
			meters := billing.NewMeterRelay(store, proc, logger)
			app.Go(meters.Run)
			deps.Meters = meters
			if cfg.EventsURL != "" {
				stop, err := museusage.Start(ctx, app.DB, museusage.Config{EventsURL: cfg.EventsURL, Recorded: meters.Kick}, logger)
				if err != nil {
					return nil, err
				}
				app.OnStop(stop)
			}
			deps.Service = billing.NewService(store, identity, proc, cfg.PublicURL)
			deps.Webhooks = billing.NewWebhooks(store)
			box := boxclient.New(cfg.BoxURL, 0, logger)
			app.OnStop(box.Close)
			deps.Inbox = billing.NewInbox(store, box, deps.Service)
			deps.Waiting = false
			return httpapi.NewServer(deps), nil
		},
	})
}

// runPlans is `platform billing plans seed`.
func runPlans(ctx context.Context, args []string, env cli.Env) error {
	if len(args) != 1 || args[0] != "seed" {
		return cli.Usagef("billing plans: usage: platform billing plans seed")
	}
	var cfg Config
	if err := service.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	n, err := Seed(ctx, cfg, env.Logger("billing"))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "billing: %d plan(s) created\n", n)
	return nil
}

// Seed creates the four plans in cfg's database through cfg's processor;
// it returns how many it created (0 when they exist).
func Seed(ctx context.Context, cfg Config, logger *slog.Logger) (int, error) {
	if cfg.DatabaseURL == "" {
		return 0, fmt.Errorf("DATABASE_URL: is required (postgres://… or sqlite:PATH)")
	}
	db, err := sqldb.New(cfg.DatabaseURL, sqldb.Options{Timeout: cfg.DatabaseTimeout})
	if err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	if pending, err := db.Pending(ctx, sqlstore.Migrations); err != nil {
		return 0, err
	} else if pending {
		return 0, fmt.Errorf("%w: run `platform billing migrate` first", sqldb.ErrSchemaBehind)
	}
	proc, _ := Processor(cfg, strings.TrimRight(cfg.PublicURL, "/"), logger)
	return billing.NewService(sqlstore.New(db), nil, proc, cfg.PublicURL).Seed(ctx)
}
