package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestReadRowRace: 300 goroutines read at once, so on PostgreSQL they
// share pipelines. Among them, reads of a missing row, reads the server
// fails (abs of the smallest bigint overflows on both engines) and reads
// whose scan refuses the row. Each caller gets its own outcome: its own
// row, sql.ErrNoRows, the server's error or its scan's, never another's.
// On PostgreSQL some failing read was scanned twice, in its pipeline and
// then alone: the reads did share pipelines, and failures left them.
func TestReadRowRace(t *testing.T) {
	errRefused := errors.New("the scan refused the row")
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		const rows = 50
		for id := 1; id <= rows; id++ {
			if _, err := db.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, id); err != nil {
				t.Fatal(err)
			}
		}
		const n = 300
		got := make([]int64, n)
		scans := make([]atomic.Int32, n)
		errs := atOnce(n, func(i int) error {
			id, operand := i%rows+1, int64(0)
			switch i % 10 {
			case 3:
				id = rows + 1 + i // no such row
			case 5:
				operand = math.MinInt64 // the server fails the read
			}
			return db.ReadRow(ctx, func(r sqldb.Row) error {
				scans[i].Add(1)
				if err := r.Scan(&got[i]); err != nil {
					return err
				}
				if i%10 == 7 {
					return errRefused
				}
				return nil
			}, `SELECT id * 10 + abs(CAST($2 AS BIGINT)) FROM t WHERE id = $1`, id, operand)
		})
		for i, err := range errs {
			switch i % 10 {
			case 3:
				if !errors.Is(err, sql.ErrNoRows) {
					t.Errorf("read %d (no such row) = %v, want sql.ErrNoRows", i, err)
				}
			case 5:
				if err == nil || errors.Is(err, sql.ErrNoRows) || errors.Is(err, errRefused) {
					t.Errorf("read %d (overflow) = %v, want the server's error", i, err)
				}
			case 7:
				if !errors.Is(err, errRefused) {
					t.Errorf("read %d (refused by its scan) = %v, want the scan's error", i, err)
				}
			default:
				if want := int64(i%rows+1) * 10; err != nil || got[i] != want {
					t.Errorf("read %d = %d, %v; want %d", i, got[i], err, want)
				}
			}
		}
		if engine == sqldb.Postgres {
			again := 0
			for i := range scans {
				if scans[i].Load() > 1 {
					again++
				}
			}
			if again == 0 {
				t.Error("no read was scanned twice: no failure happened inside a shared pipeline")
			}
		}
	})
}

// TestReadRowCancelled: a caller whose context has ended before its read
// starts gets the context's error, and its scan is not called.
func TestReadRowCancelled(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, testSchema)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		scanned := false
		err := db.ReadRow(ctx, func(r sqldb.Row) error {
			scanned = true
			var one int
			return r.Scan(&one)
		}, `SELECT 1`)
		if !errors.Is(err, context.Canceled) || scanned {
			t.Fatalf("ReadRow with a cancelled context = %v (scan called: %v), want context.Canceled and no scan", err, scanned)
		}
	})
}

// TestReadRowAllGiveUp: on PostgreSQL, reads that every caller has given
// up on are stopped on the server, whether they ran alone or shared a
// pipeline: eight callers at once read pg_sleep(60) with contexts that
// end after 200 ms, and each gets an error, not the row a minute later.
// (SQLite does not interrupt a running statement; its waits for locks
// end with the context, which other tests cover.)
func TestReadRowAllGiveUp(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		if engine != sqldb.Postgres {
			t.Skip("SQLite does not interrupt a running statement")
		}
		db := sqltest.Open(t, engine, testSchema)
		errs := atOnce(8, func(int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			return db.ReadRow(ctx, func(r sqldb.Row) error {
				var slept string
				return r.Scan(&slept)
			}, `SELECT pg_sleep(60)::text`)
		})
		for i, err := range errs {
			if err == nil {
				t.Errorf("read %d: no error, want the read stopped", i)
			}
		}
		// The connections are usable afterwards.
		var one int
		if err := db.ReadRow(context.Background(), func(r sqldb.Row) error { return r.Scan(&one) }, `SELECT 1`); err != nil || one != 1 {
			t.Fatalf("read after the stopped ones = %d, %v", one, err)
		}
	})
}
