package sqldb_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestWriteRace: 200 goroutines write at once, a fifth of them a duplicate
// key (a constraint failure) or a dangling reference. Every good write is
// committed and reported so; every bad one is reported to its own caller
// and leaves nothing; no caller gets another's failure (SQLite commits
// them in groups, PostgreSQL one by one).
func TestWriteRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		if _, err := db.Exec(ctx, `INSERT INTO t (id) VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		const n = 200
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, parent := i+2, any(nil)
				switch i % 10 {
				case 3:
					id = 1 // duplicate key
				case 7:
					parent = 100000 + i // no such row
				}
				res, err := db.Write(ctx, `INSERT INTO t (id, parent) VALUES ($1, $2)`, id, parent)
				if err == nil {
					if got, rerr := res.RowsAffected(); rerr != nil || got != 1 {
						err = errors.New("a committed write reported no row")
					}
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		want := 1
		for i, err := range errs {
			switch i % 10 {
			case 3:
				if !sqldb.IsUniqueViolation(err) {
					t.Errorf("write %d (duplicate): %v, want a unique violation", i, err)
				}
			case 7:
				if !sqldb.IsForeignKeyViolation(err) {
					t.Errorf("write %d (dangling): %v, want a foreign key violation", i, err)
				}
			default:
				want++
				if err != nil {
					t.Errorf("write %d: %v", i, err)
				}
			}
		}
		var got int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&got); err != nil || got != want {
			t.Fatalf("rows = %d (%v), want %d", got, err, want)
		}
	})
}

// TestWriteCancelled: a caller whose context has ended before its write
// starts gets the context's error, and the write does not happen.
func TestWriteCancelled(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, testSchema)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := db.Write(ctx, `INSERT INTO t (id) VALUES (1)`); !errors.Is(err, context.Canceled) {
			t.Fatalf("Write with a cancelled context = %v, want context.Canceled", err)
		}
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("rows after a cancelled write = %d (%v), want 0", n, err)
		}
	})
}
