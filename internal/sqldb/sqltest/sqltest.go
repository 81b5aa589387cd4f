// Package sqltest gives store tests a fresh, migrated database on every
// engine under test: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
)

// Engines lists the engines the current run tests.
func Engines() []sqldb.Engine {
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return []sqldb.Engine{sqldb.SQLite, sqldb.Postgres}
	}
	return []sqldb.Engine{sqldb.SQLite}
}

// Run runs fn as a subtest once per engine. The PostgreSQL subtest always
// exists: without TEST_DATABASE_URL it is reported as skipped, so a run
// that did not test PostgreSQL says so.
func Run(t *testing.T, fn func(t *testing.T, engine sqldb.Engine)) {
	t.Helper()
	for _, e := range []sqldb.Engine{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(e), func(t *testing.T) {
			skipWithout(t, e)
			fn(t, e)
		})
	}
}

// skipWithout skips t when engine is PostgreSQL and no server is given.
func skipWithout(t testing.TB, engine sqldb.Engine) {
	t.Helper()
	if engine == sqldb.Postgres && os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("PostgreSQL not tested: TEST_DATABASE_URL is not set")
	}
}

// URL creates an empty database on engine and returns its DATABASE_URL; the
// database is dropped when the test ends.
func URL(t testing.TB, engine sqldb.Engine) string {
	t.Helper()
	if engine == sqldb.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	}
	skipWithout(t, engine)
	admin := os.Getenv("TEST_DATABASE_URL")
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	name := "t_" + randomHex(8)
	adminDB, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open admin database: %v", err)
	}
	defer adminDB.Close()
	if _, err := adminDB.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}

// Open returns a fresh database on engine with migrations applied.
func Open(t testing.TB, engine sqldb.Engine, m sqldb.Migrations) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, URL(t, engine))
	if err != nil {
		t.Fatalf("open %s: %v", engine, err)
	}
	t.Cleanup(func() { db.Close() })
	if m != nil {
		if _, err := db.Migrate(ctx, m); err != nil {
			t.Fatalf("migrate %s: %v", engine, err)
		}
	}
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
