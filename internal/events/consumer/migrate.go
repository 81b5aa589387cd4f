package consumer

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/platformco/platform/internal/sqldb"
)

//go:embed migrations
var migrationFiles embed.FS

// versionTable records which of the consumer's migrations a database has,
// apart from the consuming service's own history, so the two version
// sequences never collide in one database.
const versionTable = "events_consumer_db_version"

func provider(db *sqldb.DB) (*goose.Provider, error) {
	dir, err := fs.Sub(migrationFiles, "migrations/"+string(db.Engine))
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	opts := []goose.ProviderOption{goose.WithTableName(versionTable)}
	if db.Engine == sqldb.Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, db.DB, dir, opts...)
}

// Migrate creates the consumer tables (consumed_events, parked_events) in a
// consuming service's database, and returns how many migrations it applied.
// The service runs it from its own migrate command, after its own
// migrations; running it again is a no-op.
func Migrate(ctx context.Context, db *sqldb.DB) (int, error) {
	p, err := provider(db)
	if err != nil {
		return 0, fmt.Errorf("consumer migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("consumer migrate: %w", err)
	}
	return len(res), nil
}

// Pending reports whether consumer migrations remain to be applied, for a
// readiness probe.
func Pending(ctx context.Context, db *sqldb.DB) (bool, error) {
	p, err := provider(db)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}
