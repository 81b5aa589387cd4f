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

// MigrationsFrom returns the directory dir of fsys (typically an embed.FS
// holding "migrations/postgres" and "migrations/sqlite") as Migrations. It
// is meant for a package-level variable next to the store that owns the
// schema, so it panics, at program start, when dir is not a valid path or
// lacks a directory for either engine: that is a build mistake, not a
// runtime condition.
func MigrationsFrom(fsys fs.FS, dir string) Migrations {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(fmt.Sprintf("sqldb: migrations %q: %v", dir, err))
	}
	for _, engine := range []Engine{Postgres, SQLite} {
		info, err := fs.Stat(sub, string(engine))
		if err != nil || !info.IsDir() {
			panic(fmt.Sprintf("sqldb: migrations %q has no %s directory", dir, engine))
		}
	}
	return sub
}

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
