package sqldb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Gate stands between a starting service and its database. A service
// starts whether or not the database answers (liveness is the process's,
// readiness the database's): Check tells it whether to stop (the schema
// is behind, which waiting will not fix), and Await opens the gate once
// the database answers with a current schema, however long that takes.
type Gate struct {
	db         *DB
	migrations Migrations
	migrate    string
	open       atomic.Bool
	behind     atomic.Bool
}

// ErrSchemaBehind is Check's answer when migrations are pending.
var ErrSchemaBehind = errors.New("the database schema is behind")

// NewGate returns a closed gate for db, whose schema is migrations;
// migrateCommand is what an operator runs to apply them, for messages.
func NewGate(db *DB, migrations Migrations, migrateCommand string) *Gate {
	return &Gate{db: db, migrations: migrations, migrate: migrateCommand}
}

// Check asks the database for its schema version once, within the pool's
// bound (DefaultTimeout for a pool without one). It returns nil when the
// schema is current, an error matching ErrSchemaBehind that names the
// migrate command when migrations are pending, and the database's error
// when it does not answer.
func (g *Gate) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cmpTimeout(g.db.timeout))
	defer cancel()
	pending, err := g.db.Pending(ctx, g.migrations)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	g.behind.Store(pending)
	if pending {
		return fmt.Errorf("%w: run `%s` first", ErrSchemaBehind, g.migrate)
	}
	return nil
}

// Start is how a service opens its database: it checks the schema once
// and returns Check's ErrSchemaBehind for the service to stop on. When
// the database answers with a current schema it calls open and opens the
// gate before returning, so the service serves every route from its first
// request; otherwise it logs the outage and leaves Await to open the gate
// in the background. open builds what needs the database; an error from
// it is retried as an outage.
func (g *Gate) Start(ctx context.Context, interval time.Duration, logger *slog.Logger, open func(context.Context) error) error {
	err := g.Check(ctx)
	if errors.Is(err, ErrSchemaBehind) {
		return err
	}
	if err == nil {
		if err = open(ctx); err == nil {
			g.open.Store(true)
			return nil
		}
	}
	logger.WarnContext(ctx, "database unavailable at start; serving 503 until it answers", "err", err)
	go g.Await(ctx, interval, logger, open)
	return nil
}

// Await checks the schema every interval until it is current, then calls
// open until it succeeds (building what needs the database, such as
// loading keys), and opens the gate. It returns when the gate opens or ctx
// ends. A schema found behind meanwhile is logged once, and readiness
// names it, until someone migrates.
func (g *Gate) Await(ctx context.Context, interval time.Duration, logger *slog.Logger, open func(context.Context) error) {
	var logged error
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := g.Check(ctx)
		if err == nil {
			if err = open(ctx); err == nil {
				g.open.Store(true)
				logger.InfoContext(ctx, "database available; serving")
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if logged == nil || logged.Error() != err.Error() {
			logger.WarnContext(ctx, "database not ready; readiness answers 503 until it is", "err", err)
			logged = err
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Open reports whether Await has opened the gate.
func (g *Gate) Open() bool { return g.open.Load() }

// Status is readiness in the platform's words: "ok" when the gate is open
// and the database answers within two seconds, "migrations_pending" while
// the schema is behind, "unavailable" otherwise.
func (g *Gate) Status(ctx context.Context) string {
	switch {
	case g.behind.Load() && !g.open.Load():
		return "migrations_pending"
	case !g.open.Load():
		return "unavailable"
	case g.db.Ready(ctx) != nil:
		return "unavailable"
	}
	return "ok"
}

func cmpTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}
