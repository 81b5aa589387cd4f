package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const bound = 300 * time.Millisecond

// within runs fn and fails unless it returns an outage within a few
// bounds: a hung database costs a call its deadline, never a hang.
func within(t *testing.T, what string, fn func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- fn(context.Background()) }()
	select {
	case err := <-errc:
		if !sqldb.IsUnavailable(err) {
			t.Errorf("%s: err = %v, want an outage (IsUnavailable)", what, err)
		}
		if took := time.Since(start); took > 10*bound {
			t.Errorf("%s took %v with a bound of %v", what, took, bound)
		}
	case <-time.After(30 * bound):
		t.Fatalf("%s still waiting after %v with a bound of %v", what, 30*bound, bound)
	}
}

// calls are every way a store reaches its database.
var calls = []struct {
	name string
	call func(ctx context.Context, db *sqldb.DB) error
}{
	{"QueryRow", func(ctx context.Context, db *sqldb.DB) error {
		var n int
		return db.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
	}},
	{"Query", func(ctx context.Context, db *sqldb.DB) error {
		rows, err := db.Query(ctx, `SELECT id FROM t`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}},
	{"Exec", func(ctx context.Context, db *sqldb.DB) error {
		_, err := db.Exec(ctx, `INSERT INTO t (id) VALUES (1001)`)
		return err
	}},
	{"Write", func(ctx context.Context, db *sqldb.DB) error {
		_, err := db.Write(ctx, `INSERT INTO t (id) VALUES (1002)`)
		return err
	}},
	{"InTx", func(ctx context.Context, db *sqldb.DB) error {
		return db.InTx(ctx, func(tx *sqldb.Tx) error {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES (1003)`)
			return err
		})
	}},
}

// TestTimeoutServerNeverAnswers: a PostgreSQL address that accepts
// connections and answers nothing bounds every call by DATABASE_TIMEOUT.
func TestTimeoutServerNeverAnswers(t *testing.T) {
	p := sqltest.NewProxy(t, "")
	db, err := sqldb.New("postgres://postgres@"+p.Addr()+"/x?sslmode=disable", sqldb.Options{Timeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range calls {
		within(t, c.name, func(ctx context.Context) error { return c.call(ctx, db) })
	}
}

// TestTimeoutDatabaseHangs: a database that stops answering mid-session
// (PostgreSQL frozen behind a proxy; SQLite's write lock held by another
// process) or runs a statement past the bound costs each call its bound.
func TestTimeoutDatabaseHangs(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		raw := sqltest.URL(t, engine)
		var p *sqltest.Proxy
		if engine == sqldb.Postgres {
			p = sqltest.NewProxy(t, sqltest.Target(t, raw))
			raw = p.URL(t, raw)
		}
		db, err := sqldb.New(raw, sqldb.Options{Timeout: bound})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Migrate(ctx, testSchema); err != nil {
			t.Fatal(err)
		}
		if engine == sqldb.Postgres {
			within(t, "pg_sleep past the statement timeout", func(ctx context.Context) error {
				_, err := db.Exec(ctx, `SELECT pg_sleep(10)`)
				return err
			})
			p.Frozen.Store(true)
			for _, c := range calls {
				within(t, c.name, func(ctx context.Context) error { return c.call(ctx, db) })
			}
			return
		}
		// Another process holds SQLite's write lock.
		other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(raw, "sqlite:")+"?_txlock=immediate&_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		tx, err := other.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, c := range calls {
			if c.name == "QueryRow" || c.name == "Query" {
				continue // readers are not blocked under WAL
			}
			within(t, c.name, func(ctx context.Context) error { return c.call(ctx, db) })
		}
	})
}

// TestGateUnreachableAtStart: a database down when the service starts is
// not fatal: the gate stays closed (readiness unavailable) and opens by
// itself once the database answers.
func TestGateUnreachableAtStart(t *testing.T) {
	raw := sqltest.URL(t, sqldb.Postgres)
	p := sqltest.NewProxy(t, sqltest.Target(t, raw))
	p.Down.Store(true)
	db, err := sqldb.New(p.URL(t, raw), sqldb.Options{Timeout: bound})
	if err != nil {
		t.Fatalf("New with the database down: %v", err)
	}
	defer db.Close()
	gate := sqldb.NewGate(db, testSchema, "platform test migrate")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := gate.Check(ctx); err == nil || errors.Is(err, sqldb.ErrSchemaBehind) || !sqldb.IsUnavailable(err) {
		t.Fatalf("Check with the database down = %v, want an outage", err)
	}
	if got := gate.Status(ctx); got != "unavailable" {
		t.Fatalf("Status = %q, want unavailable", got)
	}
	opened := make(chan struct{})
	go gate.Await(ctx, 20*time.Millisecond, slog.New(slog.DiscardHandler), func(ctx context.Context) error {
		close(opened)
		return nil
	})
	admin, err := sqldb.Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Migrate(ctx, testSchema); err != nil {
		t.Fatal(err)
	}
	p.Down.Store(false)
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the gate did not open after the database came up")
	}
	waitFor(t, func() bool { return gate.Status(ctx) == "ok" }, "Status ok")
}

// TestGateSchemaBehind: Check names the migrate command while migrations
// are pending; Await opens the gate once someone migrates.
func TestGateSchemaBehind(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		db := sqltest.Open(t, engine, nil)
		gate := sqldb.NewGate(db, testSchema, "platform test migrate")
		err := gate.Check(ctx)
		if !errors.Is(err, sqldb.ErrSchemaBehind) || !strings.Contains(err.Error(), "run `platform test migrate` first") {
			t.Fatalf("Check on an unmigrated database = %v, want ErrSchemaBehind naming the command", err)
		}
		if got := gate.Status(ctx); got != "migrations_pending" {
			t.Fatalf("Status = %q, want migrations_pending", got)
		}
		go gate.Await(ctx, 20*time.Millisecond, slog.New(slog.DiscardHandler), func(context.Context) error { return nil })
		if _, err := db.Migrate(ctx, testSchema); err != nil {
			t.Fatal(err)
		}
		waitFor(t, gate.Open, "the gate to open after migrating")
		if got := gate.Status(ctx); got != "ok" {
			t.Fatalf("Status = %q, want ok", got)
		}
	})
}

// TestSQLiteFilesPrivate: the database, its WAL and shared-memory files
// are created readable by their owner only, in a directory that exists.
func TestSQLiteFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	db, err := sqldb.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(context.Background(), testSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), `INSERT INTO t (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x.db", "x.db-wal", "x.db-shm"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode %v, want -rw-------", name, got)
		}
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
