package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestOperationNameIsThePackageAndFunction(t *testing.T) {
	for _, tc := range []struct{ function, want string }{
		{"github.com/platformco/platform/internal/identity/sqlstore.(*Store).CreateUser", "sqlstore.CreateUser"},
		{"github.com/platformco/platform/internal/identity/sqlstore.(*Store).CreateUser.func1", "sqlstore.CreateUser"},
		{"github.com/platformco/platform/internal/outbox.(*Publisher).claim", "outbox.claim"},
		{"github.com/platformco/platform/internal/box/sqlstore.Store.Grant.func2.1", "sqlstore.Grant"},
		{"github.com/platformco/platform/internal/events/consumer.(*Consumer).apply.gowrap1", "consumer.apply"},
		{"github.com/platformco/platform/internal/sqldb_test.recordLogin", "sqldb_test.recordLogin"},
		{"main.main", "main.main"},
	} {
		if got := sqldb.OperationName(tc.function); got != tc.want {
			t.Errorf("OperationName(%q) = %q, want %q", tc.function, got, tc.want)
		}
	}
}

type recorded struct {
	mu  sync.Mutex
	ops []string
	err []error
}

func (r *recorded) Start(ctx context.Context, op string) (context.Context, func(error)) {
	return ctx, func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ops = append(r.ops, op)
		r.err = append(r.err, err)
	}
}

var errRefused = errors.New("refused")

func writeAndRefuse(ctx context.Context, db *sqldb.DB) error {
	if _, err := db.Exec(ctx, `CREATE TABLE notes (n INTEGER)`); err != nil {
		return err
	}
	if _, err := db.Write(ctx, `INSERT INTO notes (n) VALUES (1)`); err != nil {
		return err
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		return err
	}
	if err := db.ReadRow(ctx, `SELECT n FROM notes WHERE n = $1`, 1).Scan(&n); err != nil {
		return err
	}
	// A point read that finds nothing is an outcome, not a failure.
	if err := db.ReadRow(ctx, `SELECT n FROM notes WHERE n = $1`, 2).Scan(&n); !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("a read of no row: %v, want sql.ErrNoRows", err)
	}
	return db.InTx(ctx, func(tx *sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO notes (n) VALUES (2)`); err != nil {
			return err
		}
		return errRefused
	})
}

// Every operation on the DB, a transaction or a statement outside one, is
// observed once, named by the function that called the DB (a statement
// inside a transaction is part of it), with its outcome.
func TestObserverSeesEachOperationNamedByItsCaller(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, nil)
		rec := &recorded{}
		db.Observer = rec
		if err := writeAndRefuse(context.Background(), db); !errors.Is(err, errRefused) {
			t.Fatalf("got %v, want the transaction's own error", err)
		}
		want := slices.Repeat([]string{"sqldb_test.writeAndRefuse"}, 6)
		if len(rec.ops) != len(want) {
			t.Fatalf("operations %v, want %v", rec.ops, want)
		}
		for i := range want {
			if rec.ops[i] != want[i] {
				t.Errorf("operation %d: %q, want %q", i, rec.ops[i], want[i])
			}
		}
		if last := len(rec.err) - 1; !errors.Is(rec.err[last], errRefused) || slices.ContainsFunc(rec.err[:last], func(err error) bool { return err != nil }) {
			t.Errorf("outcomes %v, want five successes (a read of no row among them) and the transaction's error", rec.err)
		}
	})
}
