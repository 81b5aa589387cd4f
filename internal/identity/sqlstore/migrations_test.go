package sqlstore_test

import (
	"context"
	"testing"

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
