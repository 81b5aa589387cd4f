package outbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestClaimIsHeapOnlyOnPostgres checks what identity's outbox fillfactor
// migration is for: the claim's lease moves only next_attempt_at, so every
// claimed row is updated in place on its page, with no new index entry.
func TestClaimIsHeapOnlyOnPostgres(t *testing.T) {
	if !slices.Contains(sqltest.Engines(), sqldb.Postgres) {
		t.Skip("PostgreSQL only: TEST_DATABASE_URL is not set")
	}
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.Postgres, sqlstore.Migrations)
	const n = 600
	insertRows(t, db, n)
	err := db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, claimPostgres, tx.Now, tx.Now.Add(time.Minute), n, 0)
		if err != nil {
			return err
		}
		claimed, err := res.RowsAffected()
		if err != nil {
			return err
		}
		var hot int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('outbox'::regclass)`).Scan(&hot); err != nil {
			return err
		}
		if claimed != n || hot != claimed {
			t.Errorf("claim updated %d rows, %d of them heap-only; want all %d heap-only", claimed, hot, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
