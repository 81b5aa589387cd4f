package sqlstore

import (
	"embed"

	"github.com/platformco/platform/internal/sqldb"
)

//go:embed migrations
var migrationFiles embed.FS

// Migrations is muse's schema history, one directory per engine.
var Migrations = sqldb.MigrationsFrom(migrationFiles, "migrations")
