package sqldb

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations is a service's embedded schema history: one directory per
// engine, "postgres" and "sqlite", each holding goose SQL files.
type Migrations fs.FS

func (db *DB) provider(m Migrations) (*goose.Provider, error) {
	dir, err := fs.Sub(m, string(db.Engine))
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Engine == Postgres {
		dialect = goose.DialectPostgres
		// Two migrate commands started together take turns instead of
		// applying the same version twice.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, db.DB, dir, opts...)
}

// Migrate applies every pending migration and returns how many it applied.
// Running it again is a no-op.
func (db *DB) Migrate(ctx context.Context, m Migrations) (int, error) {
	p, err := db.provider(m)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return len(results), fmt.Errorf("migrate: %w", err)
	}
	return len(results), nil
}

// Pending reports whether migrations remain to be applied.
func (db *DB) Pending(ctx context.Context, m Migrations) (bool, error) {
	p, err := db.provider(m)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}
