package sqldb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// What a transaction defers to its commit runs once, after the commit (the
// row is there for whoever it wakes), in the order registered; a
// transaction that rolls back, by its own error or the database's, runs
// none of it.
func TestAfterCommit(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		tests := []struct {
			name    string
			fn      func(tx *sqldb.Tx) error
			wantRun bool
		}{
			{"Committed", func(tx *sqldb.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES (1)`)
				return err
			}, true},
			{"HandlerFails", func(tx *sqldb.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES (2)`); err != nil {
					return err
				}
				return errors.New("no")
			}, false},
			{"DatabaseRefuses", func(tx *sqldb.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO t (id) VALUES (1)`) // the key is taken
				return err
			}, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var ran []int
				var rows []int
				_ = db.InTx(ctx, func(tx *sqldb.Tx) error {
					tx.AfterCommit(func() { ran = append(ran, 1); rows = append(rows, rowCount(t, db)) })
					tx.AfterCommit(func() { ran = append(ran, 2) })
					return tt.fn(tx)
				})
				switch {
				case tt.wantRun && (len(ran) != 2 || ran[0] != 1 || ran[1] != 2):
					t.Errorf("ran %v, want [1 2]", ran)
				case tt.wantRun && rows[0] != 1:
					t.Errorf("the first hook saw %d rows, want the committed one", rows[0])
				case !tt.wantRun && len(ran) != 0:
					t.Errorf("ran %v after a rollback", ran)
				}
			})
		}
	})
}
