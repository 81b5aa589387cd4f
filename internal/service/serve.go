package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/sqldb"
)

// CheckDatabase is the database's name in readiness.
const CheckDatabase = "database"

// PurgeInterval is how often a service deletes the Idempotency-Key
// records past idempotency.Retention (and once when its database opens).
const PurgeInterval = time.Hour

// Spec is what a service tells Serve: its name, its schema, and how to
// build its handler before and after its database opens.
type Spec struct {
	Name string
	// Migrations is the service's schema; nil for a service without a
	// database. With it and DATABASE_URL, Serve opens the database behind
	// a gate (sqldb.Gate): a schema behind stops the service with a line
	// naming `platform NAME migrate`; a database that does not answer is
	// an outage (probes answer, every route 503) until it does.
	Migrations sqldb.Migrations
	// DatabaseBound bounds readiness's database check; DefaultCheckBound
	// when 0.
	DatabaseBound time.Duration
	// Render draws the readiness body; DepsBody of the engine when nil.
	Render Render
	// Start builds what needs no database (clients, readiness checks) and
	// returns the handler served until the database opens (the probes,
	// 503 elsewhere), or for good without one.
	Start func(ctx context.Context, app *App) (http.Handler, error)
	// Open builds what needs the database once it answers with a current
	// schema, perhaps later from the gate's goroutine, and returns the
	// handler that serves every route. An error is retried as an outage,
	// except one matching sqldb.ErrSchemaBehind at the first attempt,
	// which stops the service.
	Open func(ctx context.Context, app *App) (http.Handler, error)
	// Wrap, when set, wraps the handler inside the telemetry middleware.
	Wrap func(http.Handler) http.Handler
	// Server, when set, adjusts the HTTP server (httpx.NewServer's).
	Server func(*http.Server)
}

// App is a service as Serve runs it: its logger, telemetry, database and
// readiness, and the loops that run beside its listener.
type App struct {
	Name    string
	Logger  *slog.Logger
	Metrics *observe.Metrics // nil when METRICS_ADDR is unset; usable nil
	Tracing *observe.Tracing // nil when tracing is off; usable nil
	// DB is nil when the service runs without a database.
	DB    *sqldb.DB
	Ready *Readiness

	ctx   context.Context
	wg    sync.WaitGroup
	mu    sync.Mutex
	stops []func()
}

// Go runs loop until Serve returns: its context ends once in-flight
// requests have drained, and Serve waits for it to return.
func (a *App) Go(loop func(ctx context.Context)) {
	a.wg.Go(func() { loop(a.ctx) })
}

// OnStop registers fn to run when Serve returns, after the loops have
// ended; the last registered runs first.
func (a *App) OnStop(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stops = append(a.stops, fn)
}

// Idempotency returns the Idempotency-Key store of the service's
// database, sealing with secret, and starts its purge (Purge), so the
// table keeps only the retention window.
func (a *App) Idempotency(secret []byte) *idempotency.Store {
	s := idempotency.New(a.DB, secret)
	a.Purge("idempotency", s.Purge)
	return s
}

// Purge runs delete once now and every PurgeInterval until Serve returns:
// the service's retention of what has stopped mattering (expired
// Idempotency-Key records, spent counters, sent mail). name labels its log
// lines; a failure is logged and tried again at the next interval.
func (a *App) Purge(name string, delete func(ctx context.Context) (int64, error)) {
	a.Go(func(ctx context.Context) { purge(ctx, name, delete, PurgeInterval, a.Logger) })
}

func purge(ctx context.Context, name string, delete func(context.Context) (int64, error), every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := delete(ctx); err != nil && ctx.Err() == nil {
			logger.WarnContext(ctx, name+": purge failed", "err", err.Error())
		} else if n > 0 {
			logger.InfoContext(ctx, name+": expired records purged", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *App) stop(cancel context.CancelFunc) {
	cancel()
	a.wg.Wait()
	a.mu.Lock()
	stops := a.stops
	a.stops = nil
	a.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// Serve runs the service spec describes on ln until ctx is done: its
// telemetry (base.Telemetry), its database behind the gate, its handler
// inside the metrics and tracing middleware; then it drains in-flight
// requests (httpx.ServeWith), ends the loops, and runs what was
// registered with OnStop. It never migrates.
func Serve(ctx context.Context, ln net.Listener, base Base, logger *slog.Logger, spec Spec) error {
	err := serve(ctx, ln, base, logger, spec)
	if err != nil {
		ln.Close()
	}
	return err
}

func serve(ctx context.Context, ln net.Listener, base Base, logger *slog.Logger, spec Spec) error {
	metrics, tracing, stopTelemetry, err := base.Telemetry.Start(ctx, spec.Name, logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	app := &App{Name: spec.Name, Logger: logger, Metrics: metrics, Tracing: tracing, ctx: loopCtx}
	defer app.stop(cancel)

	var gate *sqldb.Gate
	render := spec.Render
	if spec.Migrations != nil && base.DatabaseURL != "" {
		db, err := sqldb.New(base.DatabaseURL, sqldb.Options{Timeout: base.DatabaseTimeout})
		if err != nil {
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
		app.OnStop(func() { db.Close() })
		app.DB = db
		metrics.Database(db.DB, spec.Name)
		observe.Statements(db, metrics, tracing)
		gate = sqldb.NewGate(db, spec.Migrations, "platform "+spec.Name+" migrate")
		if render == nil {
			render = DepsBody(string(db.Engine))
		}
		app.Ready = NewReadiness(render, logger)
		app.Ready.Add(Check{Name: CheckDatabase, Check: DatabaseCheck(gate, db), Bound: spec.DatabaseBound})
	} else {
		if render == nil {
			render = DepsBody("")
		}
		app.Ready = NewReadiness(render, logger)
	}

	h, err := spec.Start(ctx, app)
	if err != nil {
		return err
	}
	sw := httpx.NewSwitch(h)
	if gate != nil {
		var (
			mu     sync.Mutex
			first  = true
			behind error
		)
		open := func(ctx context.Context) error {
			h, err := spec.Open(ctx, app)
			mu.Lock()
			if first && errors.Is(err, sqldb.ErrSchemaBehind) {
				behind = err
			}
			first = false
			mu.Unlock()
			if err != nil {
				return err
			}
			sw.Set(h)
			return nil
		}
		if err := gate.Start(loopCtx, time.Second, logger, open); err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		mu.Lock()
		err := behind
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	var served http.Handler = sw
	if spec.Wrap != nil {
		served = spec.Wrap(served)
	}
	srv := httpx.NewServer(metrics.Middleware(tracing.Middleware(served)), logger)
	if spec.Server != nil {
		spec.Server(srv)
	}
	return httpx.ServeWith(ctx, ln, srv, logger)
}

// DatabaseCheck is readiness's database: ErrMigrationsPending while the
// schema is behind, unavailable until the gate opens, then whether the
// database answers.
func DatabaseCheck(gate *sqldb.Gate, db *sqldb.DB) func(context.Context) error {
	return func(ctx context.Context) error {
		if !gate.Open() {
			if gate.Status(ctx) == "migrations_pending" {
				return ErrMigrationsPending
			}
			return errors.New("the database has not answered with a current schema yet")
		}
		return db.Ready(ctx)
	}
}
