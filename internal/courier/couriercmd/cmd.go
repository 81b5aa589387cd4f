// Package couriercmd is `platform courier`: the configuration, `serve`
// (the HTTP API, the send loop and, with EVENTS_URL, the outbox
// publisher) and `migrate`.
package couriercmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/identityclient"
	"github.com/platformco/platform/internal/courier/localmail"
	"github.com/platformco/platform/internal/courier/push"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
)

// ReadyBudget bounds the readiness probe's database check, so /readyz
// answers 503 within a second of the database going away.
const ReadyBudget = 800 * time.Millisecond

// Command is `platform courier`.
var Command = service.Command[Config, *Config]{
	Name:        "courier",
	Summary:     "the courier service (email, push, preferences, webhooks)",
	DefaultPort: 4000,
	Serve:       Serve,
	Migrate:     migrate,
}

// Migrate applies courier's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

// migrate applies courier's schema and the stream consumer's own tables
// (consumed_events, parked_events).
func migrate(ctx context.Context, databaseURL string) (int, error) {
	return service.Migrate(ctx, databaseURL, service.Schema(sqlstore.Migrations), consumer.Migrate)
}

// errConsumerBehind stops courier like a schema behind: the stream
// consumer's tables are migrated by the same command.
var errConsumerBehind = fmt.Errorf("%w: the event consumer's tables are not current: run `platform courier migrate` first", sqldb.ErrSchemaBehind)

// Serve runs courier on ln until ctx is done (service.Serve): the HTTP
// API, the send loop and, with EVENTS_URL, the outbox publisher and the
// stream consumer, which start when the database opens.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	var (
		deps     httpapi.Deps
		obs      observed
		mailer   courier.Mailer
		sealer   *seal.Sealer
		renderer *courier.Renderer
		identity *identityclient.Client
	)
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:          "courier",
		Migrations:    sqlstore.Migrations,
		DatabaseBound: ReadyBudget,
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) {
			obs = newObserved(app.Metrics)
			if cfg.EventsURL != "" {
				app.Metrics.Outbox(app.DB, logger)
				stop, err := app.Metrics.Consumers(app.DB, cfg.EventsURL, events.Stream{}, []string{webhooks.ConsumerName}, logger)
				if err != nil {
					return nil, fmt.Errorf("EVENTS_URL: %w", err)
				}
				app.OnStop(stop)
			}
			var err error
			if sealer, err = seal.New(cfg.SecretBoxKey); err != nil {
				return nil, fmt.Errorf("COURIER_SECRET_BOX_KEY: %w", err)
			}
			if renderer, err = courier.NewRenderer(); err != nil {
				return nil, fmt.Errorf("templates: %w", err)
			}
			identity = identityclient.New(identityclient.Options{Issuer: cfg.IdentityIssuer, BaseURL: cfg.IdentityURL,
				Timeout: cfg.IdentityTimeout, Logger: logger})
			if cfg.IdentityIssuer == "" || cfg.IdentityURL == "" {
				logger.WarnContext(ctx, "IDENTITY_ISSUER or COURIER_IDENTITY_URL is empty: every signed-in user's call answers 503")
			}
			deps = httpapi.Deps{Tokens: cfg.tokens, Identity: identity, Logger: logger, DatabaseTimeout: cfg.DatabaseTimeout,
				Ready: app.Ready.Probe, Waiting: true}
			switch cfg.MailAdapter {
			case AdapterLocal:
				box, err := localmail.New(cfg.LocalDir, logger)
				if err != nil {
					return nil, fmt.Errorf("COURIER_LOCAL_DIR: %w", err)
				}
				mailer, deps.Mailbox, deps.MailboxJSON = box, box.Page(), box.JSON()
			default:
				m, err := smtp.New(smtp.Options{Addr: cfg.SMTPHost, TLS: cfg.SMTPTLS, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword})
				if err != nil {
					return nil, fmt.Errorf("COURIER_SMTP_HOST: %w", err)
				}
				// Closed after the loops end: the kept sessions say QUIT
				// once nothing sends over them.
				app.OnStop(func() { m.Close() })
				mailer = m
			}
			if len(cfg.tokens) == 0 {
				logger.WarnContext(ctx, "COURIER_SERVICE_TOKENS is empty: every service route answers 401")
			}
			if cfg.EventsURL == "" {
				logger.WarnContext(ctx, "EVENTS_URL is empty: no webhook is delivered")
			}
			return httpapi.NewServer(deps), nil
		},
		Open: func(ctx context.Context, app *service.App) (http.Handler, error) {
			if err := openLoops(ctx, app, cfg, &deps, sealer, renderer, obs.mailer(mailer), identity, obs, logger); err != nil {
				return nil, err
			}
			return httpapi.NewServer(deps), nil
		},
	})
}

// openLoops builds what needs the database into deps and starts courier's
// loops (App.Go): the send loop, the idempotency purge, identity's key
// refresh, webhook deliveries and, with EVENTS_URL, the outbox publisher
// and the stream consumer.
func openLoops(ctx context.Context, app *service.App, cfg Config, deps *httpapi.Deps, sealer *seal.Sealer, renderer *courier.Renderer,
	mailer courier.Mailer, identity *identityclient.Client, obs observed, logger *slog.Logger) error {
	db := app.DB
	if pending, err := consumer.Pending(ctx, db); err != nil {
		return err
	} else if pending {
		return errConsumerBehind
	}
	if cfg.EventsURL != "" {
		stop, err := outbox.Start(ctx, db, cfg.EventsURL, outbox.Options{Service: "courier", Counted: obs.outboxCounted}, logger)
		if err != nil {
			return err
		}
		app.OnStop(stop)
	}
	store := sqlstore.New(db)
	svc := courier.NewService(store, sealer)
	hooks := courier.NewWebhooks(store, sealer, cfg.Development())
	deliverer := webhooks.NewDeliverer(obs.webhookStore(store), hooks, webhooks.NewClient(cfg.Development()), webhooks.Options{}, logger)
	deps.Service, deps.Webhooks, deps.KickDeliveries = svc, hooks, deliverer.Kick
	deps.Idempotency = app.Idempotency(cfg.SecretBoxKey)
	if cfg.vapid != nil {
		pm := courier.NewPush(store, sealer, cfg.Development(), nil)
		sender := push.NewSender(store, svc, pm, renderer, *cfg.vapid, webhooks.NewClient(cfg.Development()), push.Options{}, logger)
		svc.EnablePush(sender.Kick)
		deps.Push, deps.VAPIDPublicKey = pm, cfg.vapid.PublicKey
		app.Go(sender.Run)
	}
	app.Go(courier.NewSender(svc, renderer, mailer, courier.SenderOptions{From: cfg.MailFrom}, logger).Run)
	app.Go(identity.Run)
	app.Go(deliverer.Run)
	if cfg.EventsURL != "" {
		app.Go(func(ctx context.Context) {
			if err := webhooks.Consume(ctx, db, cfg.EventsURL, deliverer.Kick, logger); err != nil {
				logger.ErrorContext(ctx, "webhooks: the event consumer stopped", "err", err.Error())
			}
		})
	}
	return nil
}
