package sqlstore_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		n, err := db.Migrate(context.Background(), sqlstore.Migrations)
		if err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		if n != 0 {
			t.Errorf("second migrate applied %d migrations, want 0", n)
		}
		pending, err := db.Pending(context.Background(), sqlstore.Migrations)
		if err != nil || pending {
			t.Errorf("Pending() = %v, %v; want false, nil", pending, err)
		}
	})
}

// migrationsBefore is identity's schema history without version and later.
func migrationsBefore(t *testing.T, version string) sqldb.Migrations {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(sqlstore.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, name, _ := strings.Cut(path, "/"); name < version {
			b, err := fs.ReadFile(sqlstore.Migrations, path)
			out[path] = &fstest.MapFile{Data: b}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrationDropsReplaysSealedWithoutTheSecret: replays stored before
// migration 00004 were sealed with a key derived from the Idempotency-Key
// alone; the migration leaves none of them.
func TestMigrationDropsReplaysSealedWithoutTheSecret(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, migrationsBefore(t, "00004"))
		if _, err := db.Exec(ctx, `
			INSERT INTO idempotency_keys (scope, key_digest, fingerprint, status, body, created_at)
			VALUES ('user:x', 'digest', 'fp', 201, $1, $2)`, []byte("sealed"), sqldb.Timestamp(time.Now())); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx, sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("idempotency rows after the migration = %d, want 0", n)
		}
	})
}
