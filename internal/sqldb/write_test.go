package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// insertOne is one of the group-committed write forms inserting row id
// under parent with query: nil once the row is written (and, for WriteRow,
// read back), sql.ErrNoRows when the statement wrote nothing, or the
// statement's error.
type insertOne func(ctx context.Context, db *sqldb.DB, query string, id int, parent any) error

var insertForms = []struct {
	name   string
	insert insertOne
}{
	{"Write", func(ctx context.Context, db *sqldb.DB, query string, id int, parent any) error {
		res, err := db.Write(ctx, query, id, parent)
		if err != nil {
			return err
		}
		switch n, err := res.RowsAffected(); {
		case err != nil:
			return err
		case n == 0:
			return sql.ErrNoRows
		case n != 1:
			return fmt.Errorf("%d rows affected, want 1", n)
		}
		return nil
	}},
	{"WriteRow", func(ctx context.Context, db *sqldb.DB, query string, id int, parent any) error {
		got := -1
		if err := db.WriteRow(ctx, func(r sqldb.Row) error { return r.Scan(&got) }, query+` RETURNING id * 10`, id, parent); err != nil {
			return err
		}
		if got != id*10 {
			return fmt.Errorf("read back %d, want %d", got, id*10)
		}
		return nil
	}},
}

// atOnce runs fn(i) for i in [0, n), each on its own goroutine, released
// together, and returns their errors by i.
func atOnce(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// rowCount is how many rows t holds.
func rowCount(t *testing.T, db *sqldb.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteRace: for each write form, 200 goroutines write at once, three
// in ten of them a duplicate key (a constraint failure), an insert that
// does nothing on the conflict, or a dangling reference. The writes share
// commits on both engines. Every good write is committed and reported so
// (a WriteRow reads back its own row); one that does nothing is told so;
// every failure reaches only its own caller and leaves nothing.
func TestWriteRace(t *testing.T) {
	for _, form := range insertForms {
		t.Run(form.name, func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				ctx := context.Background()
				db := sqltest.Open(t, engine, testSchema)
				if _, err := db.Exec(ctx, `INSERT INTO t (id) VALUES (1)`); err != nil {
					t.Fatal(err)
				}
				errs := atOnce(200, func(i int) error {
					id, parent, query := i+2, any(nil), `INSERT INTO t (id, parent) VALUES ($1, $2)`
					switch i % 10 {
					case 3:
						id = 1 // duplicate key
					case 5:
						id = 1 // does nothing
						query += ` ON CONFLICT (id) DO NOTHING`
					case 7:
						parent = 100000 + i // no such row
					}
					return form.insert(ctx, db, query, id, parent)
				})
				want := 1
				for i, err := range errs {
					switch i % 10 {
					case 3:
						if !sqldb.IsUniqueViolation(err) {
							t.Errorf("write %d (duplicate): %v, want a unique violation", i, err)
						}
					case 5:
						if !errors.Is(err, sql.ErrNoRows) {
							t.Errorf("write %d (does nothing): %v, want sql.ErrNoRows", i, err)
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
				if got := rowCount(t, db); got != want {
					t.Fatalf("rows = %d, want %d", got, want)
				}
			})
		})
	}
}

// TestWriteGroupsCommit: 200 goroutines write at once, every write good,
// the two forms interleaved, so groups commit whole (a group with a failure
// in it runs its statements alone instead, as TestWriteRace has them). Each
// caller learns its own outcome, and every row is there.
func TestWriteGroupsCommit(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		const n = 200
		errs := atOnce(n, func(i int) error {
			form := insertForms[i%len(insertForms)]
			return form.insert(ctx, db, `INSERT INTO t (id, parent) VALUES ($1, $2)`, i+1, nil)
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("write %d (%s): %v", i, insertForms[i%len(insertForms)].name, err)
			}
		}
		if got := rowCount(t, db); got != n {
			t.Fatalf("rows = %d, want %d", got, n)
		}
	})
}

// TestWriteCancelled: for each write form, a caller whose context has
// ended before its write starts gets the context's error, and the write
// does not happen.
func TestWriteCancelled(t *testing.T) {
	for _, form := range insertForms {
		t.Run(form.name, func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				db := sqltest.Open(t, engine, testSchema)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if err := form.insert(ctx, db, `INSERT INTO t (id, parent) VALUES ($1, $2)`, 1, nil); !errors.Is(err, context.Canceled) {
					t.Fatalf("%s with a cancelled context = %v, want context.Canceled", form.name, err)
				}
				if n := rowCount(t, db); n != 0 {
					t.Fatalf("rows after a cancelled write = %d, want 0", n)
				}
			})
		})
	}
}

// TestWriteRowScanFailure: 100 WriteRow callers at once, every fourth with
// a scan that refuses the row it read. A refusal reaches only its own
// caller and leaves nothing of its statement, though the statement ran on
// the server (on PostgreSQL, in a pipeline with the rest of its group);
// every other write is committed.
func TestWriteRowScanFailure(t *testing.T) {
	errRefused := errors.New("the scan refused the row")
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		errs := atOnce(100, func(i int) error {
			return db.WriteRow(ctx, func(r sqldb.Row) error {
				var id int
				if err := r.Scan(&id); err != nil {
					return err
				}
				if i%4 == 0 {
					return errRefused
				}
				return nil
			}, `INSERT INTO t (id) VALUES ($1) RETURNING id`, i+1)
		})
		rows, err := db.Query(ctx, `SELECT id FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		kept := map[int]bool{}
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			kept[id] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			refused := i%4 == 0
			switch {
			case refused && !errors.Is(err, errRefused):
				t.Errorf("write %d (refused by its scan) = %v, want the scan's error", i, err)
			case !refused && err != nil:
				t.Errorf("write %d: %v", i, err)
			case kept[i+1] == refused:
				t.Errorf("write %d (refused %v): row kept = %v", i, refused, kept[i+1])
			}
		}
	})
}
