package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestTxQueue: writes Queue holds go with the transaction's next
// statement, in order, and a read after them sees them; a queued write
// that fails fails the transaction with its own error, whatever the
// caller did after it, and nothing of the transaction remains. Each case
// on both engines.
func TestTxQueue(t *testing.T) {
	cases := []struct {
		name string
		// fn runs in the transaction; rows is what t holds after it.
		fn      func(ctx context.Context, tx *sqldb.Tx) error
		rows    int
		wantErr func(error) bool
	}{
		{"queued then read", func(ctx context.Context, tx *sqldb.Tx) error {
			for _, id := range []int{2, 3} {
				if err := tx.Queue(ctx, `INSERT INTO t (id, parent) VALUES ($1, 1)`, id); err != nil {
					return err
				}
			}
			var n int
			if err := tx.ReadRow(ctx, `SELECT count(*) FROM t WHERE parent = $1`, 1).Scan(&n); err != nil {
				return err
			}
			if n != 2 {
				return errors.New("the read did not see the queued writes")
			}
			return nil
		}, 3, nil},
		{"queued in order then committed", func(ctx context.Context, tx *sqldb.Tx) error {
			if err := tx.Queue(ctx, `INSERT INTO t (id) VALUES (2)`); err != nil {
				return err
			}
			// Depends on the insert before it having run.
			return tx.Queue(ctx, `INSERT INTO t (id, parent) VALUES (3, 2)`)
		}, 3, nil},
		{"queued then exec", func(ctx context.Context, tx *sqldb.Tx) error {
			if err := tx.Queue(ctx, `INSERT INTO t (id) VALUES (2)`); err != nil {
				return err
			}
			res, err := tx.Exec(ctx, `UPDATE t SET parent = 1 WHERE id = 2`)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return errors.New("the update did not see the queued insert")
			}
			return nil
		}, 2, nil},
		{"no row", func(ctx context.Context, tx *sqldb.Tx) error {
			var id int
			if err := tx.ReadRow(ctx, `SELECT id FROM t WHERE id = $1`, 42).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
				return errors.New("want sql.ErrNoRows")
			}
			return nil
		}, 1, nil},
		{"failed write, error ignored by the read after it", func(ctx context.Context, tx *sqldb.Tx) error {
			_ = tx.Queue(ctx, `INSERT INTO t (id) VALUES (5)`)
			_ = tx.Queue(ctx, `INSERT INTO t (id) VALUES (1)`) // duplicate key
			var n int
			_ = tx.ReadRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			return nil
		}, 1, sqldb.IsUniqueViolation},
		{"failed write at commit", func(ctx context.Context, tx *sqldb.Tx) error {
			_ = tx.Queue(ctx, `INSERT INTO t (id) VALUES (5)`)
			return tx.Queue(ctx, `INSERT INTO t (id, parent) VALUES (6, 99)`) // dangling
		}, 1, sqldb.IsForeignKeyViolation},
		{"failed write then query row", func(ctx context.Context, tx *sqldb.Tx) error {
			_ = tx.Queue(ctx, `INSERT INTO t (id) VALUES (1)`)
			var n int
			_ = tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			return nil
		}, 1, sqldb.IsUniqueViolation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				ctx := context.Background()
				db := sqltest.Open(t, engine, testSchema)
				if _, err := db.Exec(ctx, `INSERT INTO t (id) VALUES (1)`); err != nil {
					t.Fatal(err)
				}
				err := db.InTx(ctx, func(tx *sqldb.Tx) error { return c.fn(ctx, tx) })
				switch {
				case c.wantErr == nil && err != nil:
					t.Fatalf("InTx: %v", err)
				case c.wantErr != nil && !c.wantErr(err):
					t.Fatalf("InTx: %v, not the queued write's failure", err)
				}
				if got := rowCount(t, db); got != c.rows {
					t.Fatalf("rows = %d, want %d", got, c.rows)
				}
			})
		})
	}
}
