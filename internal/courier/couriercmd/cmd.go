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
	"github.com/platformco/platform/internal/config"
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
		var cfg Config
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
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

// errConsumerBehind stops courier like a schema behind: the stream
// consumer's tables are migrated by the same command.
var errConsumerBehind = errors.New("the event consumer's tables are not current: run `platform courier migrate` first")

// Serve runs courier on ln until ctx is done: the HTTP API, the send loop
// and, with EVENTS_URL, the outbox publisher. It does not migrate: a
// schema that is behind stops it with a line naming the command that
// brings it up to date; while the database does not answer it serves 503
// until it does (sqldb.Gate), and then starts its loops.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	defer ln.Close()
	db, err := sqldb.New(cfg.DatabaseURL, sqldb.Options{Timeout: cfg.DatabaseTimeout})
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "courier", logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	metrics.Database(db.DB, "courier")
	observe.Statements(db, metrics, tracing)
	obs := newObserved(metrics)
	if cfg.EventsURL != "" {
		metrics.Outbox(db, logger)
		stopConsumerMetrics, err := metrics.Consumers(db, cfg.EventsURL, events.Stream{}, []string{webhooks.ConsumerName}, logger)
		if err != nil {
			return fmt.Errorf("EVENTS_URL: %w", err)
		}
		defer stopConsumerMetrics()
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
		logger.WarnContext(ctx, "IDENTITY_ISSUER or COURIER_IDENTITY_URL is empty: every signed-in user's call answers 503")
	}
	gate := sqldb.NewGate(db, sqlstore.Migrations, "platform courier migrate")
	deps := httpapi.Deps{Tokens: cfg.tokens, Identity: identity, Logger: logger, DatabaseTimeout: cfg.DatabaseTimeout,
		Ready: Readiness(gate, db, logger), Waiting: true}
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
		// Deferred before the loops' stop, so it runs after they end: the
		// kept sessions say QUIT once nothing sends over them.
		defer m.Close()
		mailer = m
	}
	if len(cfg.tokens) == 0 {
		logger.WarnContext(ctx, "COURIER_SERVICE_TOKENS is empty: every service route answers 401")
	}
	if cfg.EventsURL == "" {
		logger.WarnContext(ctx, "EVENTS_URL is empty: no webhook is delivered")
	}
	h := httpx.NewSwitch(httpapi.NewServer(deps))

	// The loops start when the gate opens, perhaps later from the gate's
	// goroutine; they stop (and are waited for) when Serve returns.
	loopCtx, stopLoops := context.WithCancel(ctx)
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		stopOutbox  = func() {}
		firstOpened = true
		firstErr    error
	)
	defer func() {
		stopLoops()
		mu.Lock()
		stopOutbox()
		mu.Unlock()
		wg.Wait()
	}()
	open := func(ctx context.Context) error {
		err := openLoops(ctx, loopCtx, db, cfg, &deps, sealer, renderer, obs.mailer(mailer), identity, obs, logger, &wg, func(stop func()) {
			mu.Lock()
			stopOutbox = stop
			mu.Unlock()
		})
		if err == nil {
			h.Set(httpapi.NewServer(deps))
		}
		mu.Lock()
		if firstOpened {
			firstOpened, firstErr = false, err
		}
		mu.Unlock()
		return err
	}
	if err := gate.Start(loopCtx, time.Second, logger, open); err != nil {
		return fmt.Errorf("courier: %w", err)
	}
	mu.Lock()
	behind := errors.Is(firstErr, errConsumerBehind)
	mu.Unlock()
	if behind {
		return fmt.Errorf("courier: %w", errConsumerBehind)
	}
	return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(h)), logger)
}

// openLoops builds what needs the database into deps and starts courier's
// loops under loopCtx: the send loop, the idempotency purge, identity's key
// refresh, webhook deliveries and, with EVENTS_URL, the outbox publisher
// and the stream consumer.
func openLoops(ctx, loopCtx context.Context, db *sqldb.DB, cfg Config, deps *httpapi.Deps, sealer *courier.Sealer, renderer *courier.Renderer,
	mailer courier.Mailer, identity *identityclient.Client, obs observed, logger *slog.Logger, wg *sync.WaitGroup, setStopOutbox func(func())) error {
	if pending, err := consumer.Pending(ctx, db); err != nil {
		return err
	} else if pending {
		return errConsumerBehind
	}
	if cfg.EventsURL != "" {
		stop, err := outbox.Start(loopCtx, db, cfg.EventsURL, outbox.Options{Service: "courier", Counted: obs.outboxCounted}, logger)
		if err != nil {
			return err
		}
		setStopOutbox(stop)
	}
	store := sqlstore.New(db)
	svc := courier.NewService(store, sealer)
	hooks := courier.NewWebhooks(store, sealer, cfg.Development())
	deliverer := webhooks.NewDeliverer(obs.webhookStore(store), hooks, webhooks.NewClient(cfg.Development()), webhooks.Options{}, logger)
	deps.Service, deps.Webhooks, deps.KickDeliveries = svc, hooks, deliverer.Kick
	deps.Idempotency = idempotency.New(db, cfg.SecretBoxKey)
	idem := deps.Idempotency
	wg.Go(func() {
		courier.NewSender(svc, renderer, mailer, courier.SenderOptions{From: cfg.MailFrom}, logger).Run(loopCtx)
	})
	wg.Go(func() { purgeIdempotency(loopCtx, idem, logger) })
	wg.Go(func() { identity.Run(loopCtx) })
	wg.Go(func() { deliverer.Run(loopCtx) })
	if cfg.EventsURL != "" {
		wg.Go(func() {
			if err := webhooks.Consume(loopCtx, db, cfg.EventsURL, deliverer.Kick, logger); err != nil {
				logger.ErrorContext(loopCtx, "webhooks: the event consumer stopped", "err", err.Error())
			}
		})
	}
	return nil
}

// Readiness is ready while the gate is open and the database answers
// within ReadyBudget: a database that is gone (refusing, or silent) reads
// as 503 within a second, which is what a probe with a 1 s timeout needs
// to see. Before the gate opens it says what the gate says.
func Readiness(gate *sqldb.Gate, db *sqldb.DB, logger *slog.Logger) func(context.Context) httpx.Readiness {
	deps := string(db.Engine)
	ok := httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": deps}}
	down := httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": deps}}
	behind := httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": deps, "migrations": "pending"}}
	var warned atomic.Bool
	return func(ctx context.Context) httpx.Readiness {
		if !gate.Open() {
			if gate.Status(ctx) == "migrations_pending" {
				return behind
			}
			return down
		}
		ctx, cancel := context.WithTimeout(ctx, ReadyBudget)
		defer cancel()
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			if !warned.Swap(true) {
				logger.WarnContext(ctx, "readiness: database does not answer", "err", err.Error())
			}
			return down
		}
		if warned.Swap(false) {
			logger.InfoContext(ctx, "readiness: database answers again")
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
				logger.WarnContext(ctx, "idempotency purge failed", "err", err.Error())
			}
		}
	}
}
