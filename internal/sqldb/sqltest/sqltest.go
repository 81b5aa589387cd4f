// Package sqltest gives store tests a fresh, migrated database on every
// engine under test: SQLite always, PostgreSQL when TEST_DATABASE_URL is set
// (without it, each PostgreSQL subtest reports that it skipped).
//
// On PostgreSQL a migrated database is a clone of a template: the first test
// that needs a schema migrates it once into a database named by the hash of
// its migration files, and every test after that, in this binary or the next,
// runs CREATE DATABASE … TEMPLATE, which copies files instead of replaying
// the migrations.
package sqltest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/platformco/platform/internal/sqldb"
)

// skipPostgres is the message of every PostgreSQL subtest a run without
// TEST_DATABASE_URL skips.
const skipPostgres = "TEST_DATABASE_URL not set: PostgreSQL not tested"

// Engines lists the engines the current run tests.
func Engines() []sqldb.Engine {
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return []sqldb.Engine{sqldb.SQLite, sqldb.Postgres}
	}
	return []sqldb.Engine{sqldb.SQLite}
}

// Run runs fn as a subtest once per engine, the engines in parallel (each
// has its own database, so they share nothing; the subtests run after the
// calling test's function returns, so nothing may follow Run there). The
// PostgreSQL subtest always exists, so a run without TEST_DATABASE_URL says
// it skipped.
func Run(t *testing.T, fn func(t *testing.T, engine sqldb.Engine)) {
	t.Helper()
	for _, e := range []sqldb.Engine{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(e), func(t *testing.T) {
			if e == sqldb.Postgres && os.Getenv("TEST_DATABASE_URL") == "" {
				t.Skip(skipPostgres)
			}
			t.Parallel()
			fn(t, e)
		})
	}
}

// URL creates an empty database on engine and returns its DATABASE_URL; the
// database is dropped when the test ends.
func URL(t testing.TB, engine sqldb.Engine) string {
	t.Helper()
	return create(t, engine, "")
}

// Open returns a fresh database on engine with migrations m applied (none
// when m is nil), closed when the test ends.
func Open(t testing.TB, engine sqldb.Engine, m sqldb.Migrations) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	tpl := ""
	if engine == sqldb.Postgres && m != nil {
		tpl = template(t, m)
	}
	rawURL := create(t, engine, tpl)
	db, err := sqldb.Open(ctx, rawURL)
	if err != nil {
		t.Fatalf("open %s: %v", engine, err)
	}
	t.Cleanup(func() { db.Close() })
	if m != nil && engine != sqldb.Postgres {
		if _, err := db.Migrate(ctx, m); err != nil {
			t.Fatalf("migrate %s: %v", engine, err)
		}
	}
	return db
}

// create makes a database for the test, a copy of tpl when tpl is set, and
// drops it when the test ends.
func create(t testing.TB, engine sqldb.Engine, tpl string) string {
	t.Helper()
	if engine == sqldb.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	}
	admin := adminURL(t)
	name := "t_" + randomHex(8)
	stmt := "CREATE DATABASE " + name
	if tpl != "" {
		stmt += " TEMPLATE " + tpl
	}
	if err := adminExec(admin, stmt); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() { _ = adminExec(admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return withPath(admin, name)
}

// templates holds, per migration hash, the template database this binary
// made or found, so each schema is looked up once per binary.
var templates sync.Map // hash → *tmpl

type tmpl struct {
	once sync.Once
	name string
	err  error
}

// template returns the name of a PostgreSQL database holding m's schema,
// migrating one into place the first time a schema is seen. The name is
// the hash of m's PostgreSQL files, so a changed migration gets a new
// template and parallel test binaries share one: each migrates into its own
// scratch database and renames it into place, and the loser of a race drops
// its copy.
func template(t testing.TB, m sqldb.Migrations) string {
	t.Helper()
	hash, err := hashMigrations(m)
	if err != nil {
		t.Fatalf("hash migrations: %v", err)
	}
	v, _ := templates.LoadOrStore(hash, &tmpl{})
	tp := v.(*tmpl)
	tp.once.Do(func() { tp.name, tp.err = ensureTemplate(adminURL(t), hash, m) })
	if tp.err != nil {
		t.Fatalf("template database: %v", tp.err)
	}
	return tp.name
}

func ensureTemplate(admin, hash string, m sqldb.Migrations) (string, error) {
	name := "tpl_" + hash[:16]
	exists, err := databaseExists(admin, name)
	if err != nil || exists {
		return name, err
	}
	scratch := name + "_" + randomHex(4)
	if err := adminExec(admin, "CREATE DATABASE "+scratch); err != nil {
		return "", err
	}
	ctx := context.Background()
	db, err := sqldb.Open(ctx, withPath(admin, scratch))
	if err == nil {
		_, err = db.Migrate(ctx, m)
		db.Close()
	}
	if err == nil {
		err = adminExec(admin, "ALTER DATABASE "+scratch+" RENAME TO "+name)
	}
	if err != nil {
		_ = adminExec(admin, "DROP DATABASE IF EXISTS "+scratch+" WITH (FORCE)")
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P04" {
			return name, nil // another binary renamed its copy first
		}
		return "", err
	}
	return name, nil
}

// hashMigrations hashes the names and contents of m's PostgreSQL files.
func hashMigrations(m sqldb.Migrations) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(m, string(sqldb.Postgres), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(m, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func adminURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		t.Skip(skipPostgres)
	}
	if _, err := url.Parse(admin); err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	return admin
}

func adminExec(admin, stmt string) error {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(stmt)
	return err
}

func databaseExists(admin, name string) (bool, error) {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n)
	return n > 0, err
}

func withPath(rawURL, name string) string {
	u, _ := url.Parse(rawURL) // adminURL checked it
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
