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

// TestTxQueueNothingSent: a transaction on PostgreSQL that runs no
// statement sends nothing (its BEGIN was only queued) and commits; one
// that fails after a statement rolls it back and leaves its connection
// usable by the next transaction. Both engines.
func TestTxQueueNothingSent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		if err := db.InTx(ctx, func(*sqldb.Tx) error { return nil }); err != nil {
			t.Fatalf("empty transaction: %v", err)
		}
		boom := errors.New("boom")
		for range 20 { // more than the pool's connections
			err := db.InTx(ctx, func(tx *sqldb.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES (7)`); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx: %v, want boom", err)
			}
		}
		if got := rowCount(t, db); got != 0 {
			t.Fatalf("rows = %d, want 0 (rolled back)", got)
		}
		if err := db.InTx(ctx, func(tx *sqldb.Tx) error {
			return tx.Queue(ctx, `INSERT INTO t (id) VALUES (8)`)
		}); err != nil {
			t.Fatalf("queued only: %v", err)
		}
		if got := rowCount(t, db); got != 1 {
			t.Fatalf("rows = %d, want 1", got)
		}
	})
}

// TestTxReadRows: reads in one pipeline each keep their own outcome, a
// missing row included, and see the writes queued before them; a read
// that fails fails those after it and the transaction. Both engines.
func TestTxReadRows(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		err := db.InTx(ctx, func(tx *sqldb.Tx) error {
			if err := tx.Queue(ctx, `INSERT INTO t (id) VALUES (1), (2)`); err != nil {
				return err
			}
			rows := tx.ReadRows(ctx,
				sqldb.Read{Query: `SELECT id FROM t WHERE id = $1`, Args: []any{2}},
				sqldb.Read{Query: `SELECT id FROM t WHERE id = $1`, Args: []any{3}},
				sqldb.Read{Query: `SELECT count(*) FROM t`})
			var a, c int
			if err := rows[0].Scan(&a); err != nil || a != 2 {
				t.Errorf("first read: %d, %v", a, err)
			}
			if err := rows[1].Scan(&a); !errors.Is(err, sql.ErrNoRows) {
				t.Errorf("second read: %v, want sql.ErrNoRows", err)
			}
			if err := rows[2].Scan(&c); err != nil || c != 2 {
				t.Errorf("third read: %d, %v", c, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = db.InTx(ctx, func(tx *sqldb.Tx) error {
			rows := tx.ReadRows(ctx,
				sqldb.Read{Query: `SELECT id FROM t WHERE id = $1`, Args: []any{1}},
				sqldb.Read{Query: `SELECT CAST(id AS INTEGER) / (id - id) FROM t WHERE id = $1`, Args: []any{1}}, // fails when run (PostgreSQL) or scanned (SQLite's NULL)
				sqldb.Read{Query: `SELECT count(*) FROM t`})
			var a int
			if err := rows[0].Scan(&a); err != nil || a != 1 {
				t.Errorf("first read: %d, %v", a, err)
			}
			if err := rows[1].Scan(&a); err == nil {
				t.Error("the failing read reported no error")
			}
			if engine == sqldb.Postgres {
				if err := rows[2].Scan(&a); err == nil {
					t.Error("a read after the failed one in its pipeline reported no error")
				}
			}
			return rows[1].Scan(&a)
		})
		if err == nil {
			t.Fatal("InTx: no error after a failed read")
		}
	})
}
