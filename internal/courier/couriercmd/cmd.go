// Package couriercmd is `platform courier`: the configuration, `serve`
// (the HTTP API, the send loop and, with EVENTS_URL, the outbox
// publisher) and `migrate`.
package couriercmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/identityclient"
	"github.com/platformco/platform/internal/courier/localmail"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
)

const usage = `usage: platform courier <command>

  serve      run the courier service (email, preferences, webhooks)
  migrate    apply courier's schema migrations to DATABASE_URL`

// ReadyBudget bounds the readiness probe's database check, so /readyz
// answers 503 within a second of the database going away.
const ReadyBudget = 800 * time.Millisecond

// Run runs a `platform courier` subcommand.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("courier: no subcommand given\n%s", usage)
	}
	switch args[0] {
	case "serve":
		if len(args) > 1 {
			return cli.Usagef("courier serve takes no arguments")
		}
		cfg, err := LoadConfig(env.Getenv)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
		}
		return Serve(ctx, cfg, env.Logger("courier"), ln)
	case "migrate":
		if len(args) > 1 {
			return cli.Usagef("courier migrate takes no arguments")
		}
		url := env.Getenv("DATABASE_URL")
		if url == "" {
			return errors.New("DATABASE_URL: is required to migrate")
		}
		if _, _, err := sqldb.ParseURL(url); err != nil {
			return fmt.Errorf("DATABASE_URL: %v", err)
		}
		n, err := migrate(ctx, url)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "courier: %d migration(s) applied; schema is current\n", n)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(env.Stdout, usage)
		return nil
	default:
		return cli.Usagef("courier: unknown subcommand %q\n%s", args[0], usage)
	}
}

// Migrate applies courier's pending migrations to databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	_, err := migrate(ctx, databaseURL)
	return err
}

func migrate(ctx context.Context, databaseURL string) (int, error) {
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	n, err := db.Migrate(ctx, sqlstore.Migrations)
	if err != nil {
		return n, err
	}
	// The stream consumer's own tables (consumed_events, parked_events).
	m, err := consumer.Migrate(ctx, db)
	return n + m, err
}

// Serve runs courier on ln until ctx is done: the HTTP API, the send loop
// and, with EVENTS_URL, the outbox publisher. It does not migrate; a
// schema that is behind stops it with a line naming the command that
// brings it up to date.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	defer ln.Close()
	db, err := sqldb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	metrics, stopMetrics, err := observe.Start(ctx, "courier", cfg.MetricsAddr, logger)
	if err != nil {
		return err
	}
	defer stopMetrics()
	metrics.Database(db.DB, "courier")
	if cfg.EventsURL != "" {
		metrics.Outbox(db, logger)
		stopConsumerMetrics, err := metrics.Consumers(db, cfg.EventsURL, events.Stream{}, []string{webhooks.ConsumerName}, logger)
		if err != nil {
			return fmt.Errorf("EVENTS_URL: %w", err)
		}
		defer stopConsumerMetrics()
	}
	if pending, err := db.Pending(ctx, sqlstore.Migrations); err != nil {
		return fmt.Errorf("DATABASE_URL: read schema version: %w", err)
	} else if pending {
		return errors.New("DATABASE_URL: the database schema is not current: run `platform courier migrate` first")
	}
	if pending, err := consumer.Pending(ctx, db); err != nil || pending {
		return errors.New("DATABASE_URL: the event consumer's tables are not current: run `platform courier migrate` first")
	}
	sealer, err := courier.NewSealer(cfg.SecretBoxKey)
	if err != nil {
		return fmt.Errorf("COURIER_SECRET_BOX_KEY: %w", err)
	}
	renderer, err := courier.NewRenderer()
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	identity := identityclient.New(identityclient.Options{Issuer: cfg.IdentityIssuer, BaseURL: cfg.IdentityURL,
		Timeout: cfg.IdentityTimeout, Logger: logger})
	if cfg.IdentityIssuer == "" || cfg.IdentityURL == "" {
		logger.Warn("IDENTITY_ISSUER or COURIER_IDENTITY_URL is empty: every signed-in user's call answers 503")
	}
	store := sqlstore.New(db)
	svc := courier.NewService(store, sealer, identity)
	hooks := courier.NewWebhooks(store, identity, sealer, cfg.Development())
	deliverer := webhooks.NewDeliverer(store, hooks, webhooks.NewClient(cfg.Development()), webhooks.Options{}, logger)
	deps := httpapi.Deps{
		Service: svc, Webhooks: hooks, KickDeliveries: deliverer.Kick, Tokens: cfg.tokens, Idempotency: idempotency.New(db, cfg.SecretBoxKey), Logger: logger,
		DatabaseTimeout: cfg.DatabaseTimeout, Ready: Readiness(db, logger),
	}
	var mailer courier.Mailer
	switch cfg.MailAdapter {
	case AdapterLocal:
		box, err := localmail.New(cfg.LocalDir, logger)
		if err != nil {
			return fmt.Errorf("COURIER_LOCAL_DIR: %w", err)
		}
		mailer, deps.Mailbox, deps.MailboxJSON = box, box.Page(), box.JSON()
	default:
		m, err := smtp.New(smtp.Options{Addr: cfg.SMTPHost, TLS: cfg.SMTPTLS, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword})
		if err != nil {
			return fmt.Errorf("COURIER_SMTP_HOST: %w", err)
		}
		mailer = m
	}
	if len(cfg.tokens) == 0 {
		logger.Warn("COURIER_SERVICE_TOKENS is empty: every service route answers 401")
	}
	if cfg.EventsURL != "" {
		stop, err := outbox.Start(ctx, db, cfg.EventsURL, outbox.Options{Service: "courier"}, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	loopCtx, stopLoop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		courier.NewSender(svc, renderer, mailer, courier.SenderOptions{From: cfg.MailFrom}, logger).Run(loopCtx)
	})
	wg.Go(func() { purgeIdempotency(loopCtx, deps.Idempotency, logger) })
	wg.Go(func() { identity.Run(loopCtx) })
	wg.Go(func() { deliverer.Run(loopCtx) })
	if cfg.EventsURL != "" {
		wg.Go(func() {
			if err := webhooks.Consume(loopCtx, db, cfg.EventsURL, logger); err != nil {
				logger.Error("webhooks: the event consumer stopped", "error", err.Error())
			}
		})
	} else {
		logger.Warn("EVENTS_URL is empty: no webhook is delivered")
	}
	defer func() { stopLoop(); wg.Wait() }()
	return httpx.Serve(ctx, ln, metrics.Middleware(httpapi.New(deps)), logger)
}

// Readiness is ready while the database answers within ReadyBudget: a
// database that is gone (refusing, or silent) reads as 503 within a
// second, which is what a probe with a 1 s timeout needs to see.
func Readiness(db *sqldb.DB, logger *slog.Logger) func(context.Context) httpx.Readiness {
	deps := string(db.Engine)
	ok := httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": deps}}
	down := httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": deps}}
	var warned atomic.Bool
	return func(ctx context.Context) httpx.Readiness {
		ctx, cancel := context.WithTimeout(ctx, ReadyBudget)
		defer cancel()
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			if !warned.Swap(true) {
				logger.Warn("readiness: database does not answer", "error", err.Error())
			}
			return down
		}
		if warned.Swap(false) {
			logger.Info("readiness: database answers again")
		}
		return ok
	}
}

func purgeIdempotency(ctx context.Context, s *idempotency.Store, logger *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("idempotency purge failed", "error", err.Error())
			}
		}
	}
}
