package httpx

import (
	"context"
	"maps"
	"testing"
	"testing/fstest"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

var schema = fstest.MapFS{
	"postgres/00001_t.sql": {Data: []byte("-- +goose Up\nCREATE TABLE t (id integer PRIMARY KEY);\n")},
	"sqlite/00001_t.sql":   {Data: []byte("-- +goose Up\nCREATE TABLE t (id INTEGER PRIMARY KEY);\n")},
}

// TestDatabaseReadiness: readiness names a pending migration, and is
// ready once the gate opens on a current schema.
func TestDatabaseReadiness(t *testing.T) {
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.SQLite, nil)
	gate := sqldb.NewGate(db, schema, "platform test migrate")
	ready := DatabaseReadiness(gate, db.Engine)
	if err := gate.Check(ctx); err == nil {
		t.Fatal("Check on an unmigrated database succeeded")
	}
	got := ready(ctx)
	if want := map[string]string{"status": "unavailable", "deps": "sqlite", "migrations": "pending"}; got.Ready || !maps.Equal(got.Body.(map[string]string), want) {
		t.Errorf("behind: %+v, want not ready %v", got, want)
	}
	if _, err := db.Migrate(ctx, schema); err != nil {
		t.Fatal(err)
	}
	if err := gate.Start(ctx, 0, nil, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	got = ready(ctx)
	if want := map[string]string{"status": "ok", "deps": "sqlite"}; !got.Ready || !maps.Equal(got.Body.(map[string]string), want) {
		t.Errorf("current: %+v, want ready %v", got, want)
	}
}
