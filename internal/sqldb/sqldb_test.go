package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		in         string
		wantEngine sqldb.Engine
		wantDSN    string // prefix
		wantErr    bool
	}{
		{in: "postgres://u@localhost:5432/db", wantEngine: sqldb.Postgres, wantDSN: "postgres://"},
		{in: "postgresql://u@localhost/db?sslmode=disable", wantEngine: sqldb.Postgres, wantDSN: "postgresql://"},
		{in: "sqlite:data/identity.db", wantEngine: sqldb.SQLite, wantDSN: "file:data/identity.db?"},
		{in: "sqlite:///var/lib/x.db", wantEngine: sqldb.SQLite, wantDSN: "file:/var/lib/x.db?"},
		{in: "sqlite:", wantErr: true},
		{in: "mysql://u@h/db", wantErr: true},
		{in: "data.db", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		engine, dsn, err := sqldb.ParseURL(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseURL(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if tt.wantErr {
			continue
		}
		if engine != tt.wantEngine || len(dsn) < len(tt.wantDSN) || dsn[:len(tt.wantDSN)] != tt.wantDSN {
			t.Errorf("ParseURL(%q) = %s, %q; want %s, %q…", tt.in, engine, dsn, tt.wantEngine, tt.wantDSN)
		}
	}
}

func TestRebind(t *testing.T) {
	pg := &sqldb.DB{Engine: sqldb.Postgres}
	lite := &sqldb.DB{Engine: sqldb.SQLite}
	q := "SELECT $1, $12 FROM t WHERE a = $2 AND b = '$'"
	if got := pg.Rebind(q); got != q {
		t.Errorf("postgres rebind changed the query: %q", got)
	}
	if got, want := lite.Rebind(q), "SELECT ?1, ?12 FROM t WHERE a = ?2 AND b = '$'"; got != want {
		t.Errorf("sqlite rebind = %q, want %q", got, want)
	}
}

var testSchema = fstest.MapFS{
	"postgres/00001_t.sql": {Data: []byte(`-- +goose Up
CREATE TABLE t (id integer PRIMARY KEY, parent integer REFERENCES t (id), at timestamptz);
-- +goose Down
DROP TABLE t;
`)},
	"sqlite/00001_t.sql": {Data: []byte(`-- +goose Up
CREATE TABLE t (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES t (id), at TIMESTAMP);
-- +goose Down
DROP TABLE t;
`)},
}

func TestEngines(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		fixed := time.Date(2026, 1, 2, 3, 4, 5, 678912345, time.FixedZone("x", 3600))
		db.Now = func() time.Time { return fixed }

		// Times round-trip in UTC at microsecond precision on both engines.
		err := db.InTx(ctx, func(tx *sqldb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO t (id, at) VALUES ($1, $2)`, 1, tx.Now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var at time.Time
		if err := db.QueryRow(ctx, `SELECT at FROM t WHERE id = $1`, 1).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if want := sqldb.Timestamp(fixed); !at.Equal(want) {
			t.Errorf("stored time %v, want %v", at, want)
		}

		// Errors are classified the same way on both engines.
		_, err = db.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, 1)
		if !sqldb.IsUniqueViolation(err) {
			t.Errorf("duplicate key: IsUniqueViolation(%v) = false", err)
		}
		_, err = db.Exec(ctx, `INSERT INTO t (id, parent) VALUES ($1, $2)`, 2, 99)
		if !sqldb.IsForeignKeyViolation(err) {
			t.Errorf("dangling reference: IsForeignKeyViolation(%v) = false", err)
		}

		// A failing function rolls the whole transaction back.
		boom := errors.New("boom")
		err = db.InTx(ctx, func(tx *sqldb.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, 3); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Errorf("InTx err = %v, want boom", err)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM t WHERE id = $1`, 3).Scan(&n); err != nil || n != 0 {
			t.Errorf("rolled-back row present: n=%d err=%v", n, err)
		}
		if err := db.Ready(ctx); err != nil {
			t.Errorf("Ready: %v", err)
		}
		if pending, err := db.Pending(ctx, testSchema); err != nil || pending {
			t.Errorf("Pending = %v, %v", pending, err)
		}
	})
}

func TestMigrationsFrom(t *testing.T) {
	both := fstest.MapFS{
		"migrations/postgres/00001_x.sql": {Data: []byte("-- +goose Up\n")},
		"migrations/sqlite/00001_x.sql":   {Data: []byte("-- +goose Up\n")},
	}
	m := sqldb.MigrationsFrom(both, "migrations")
	if _, err := m.Open("sqlite/00001_x.sql"); err != nil {
		t.Errorf("open through the returned Migrations: %v", err)
	}
	onlyPostgres := fstest.MapFS{"migrations/postgres/00001_x.sql": {Data: []byte("-- +goose Up\n")}}
	for name, tc := range map[string]struct {
		fsys fstest.MapFS
		dir  string
	}{
		"invalid path":     {both, "../migrations"},
		"missing dir":      {both, "schema"},
		"an engine absent": {onlyPostgres, "migrations"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("MigrationsFrom(%q) did not panic", tc.dir)
				}
			}()
			sqldb.MigrationsFrom(tc.fsys, tc.dir)
		})
	}
}

// TestIsUnavailable: an unreachable database is an outage (503), not a bug.
func TestIsUnavailable(t *testing.T) {
	ctx := context.Background()
	// Nothing listens on port 1.
	db, err := sqldb.Open(ctx, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1")
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded against a closed port")
	}
	if !sqldb.IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = false, want true", err)
	}
	for _, err := range []error{nil, errors.New("boom"), sql.ErrNoRows} {
		if sqldb.IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = true, want false", err)
		}
	}
}
