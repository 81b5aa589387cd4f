package sqlstore

import (
	"embed"
	"io/fs"

	"github.com/platformco/platform/internal/sqldb"
)

//go:embed migrations
var migrationFiles embed.FS

// Migrations is box's schema history, one directory per engine.
var Migrations sqldb.Migrations = mustSub(migrationFiles, "migrations")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
