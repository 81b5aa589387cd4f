package sqldb_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestPreparedStatementsUnderConcurrency races readers (outside and inside
// transactions) against writers on the same texts, so every pooled
// connection holds prepared statements while others write: a statement
// left holding its read snapshot would make a writer fail with
// SQLITE_BUSY. Every write must land and every read must see a whole row.
func TestPreparedStatementsUnderConcurrency(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		const writers, readers, each = 40, 80, 10
		var wg sync.WaitGroup
		errc := make(chan error, writers*each+readers*each)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					id := w*each + i + 1
					err := db.InTx(ctx, func(tx *sqldb.Tx) error {
						var n int
						if err := tx.QueryRow(ctx, `SELECT count(*) FROM t WHERE id < $1`, id).Scan(&n); err != nil {
							return err
						}
						_, err := tx.Exec(ctx, `INSERT INTO t (id, at) VALUES ($1, $2)`, id, tx.Now)
						return err
					})
					if err != nil {
						errc <- fmt.Errorf("writer %d: %w", id, err)
					}
				}
			}()
		}
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					rows, err := db.Query(ctx, `SELECT id, at FROM t WHERE id > $1 ORDER BY id`, (r+i)%writers)
					if err != nil {
						errc <- err
						continue
					}
					for rows.Next() {
						var id int
						var at *string
						if err := rows.Scan(&id, &at); err != nil {
							errc <- err
						}
					}
					if err := rows.Close(); err != nil {
						errc <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != writers*each {
			t.Fatalf("rows = %d (%v), want %d", n, err, writers*each)
		}
	})
}

// TestStatementCacheBound runs more distinct texts than the cache keeps:
// every one answers, prepared or not.
func TestStatementCacheBound(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		for i := range 700 {
			var got int
			q := fmt.Sprintf(`SELECT %d + $1`, i)
			if err := db.QueryRow(ctx, q, 1).Scan(&got); err != nil || got != i+1 {
				t.Fatalf("%s: %d, %v", q, got, err)
			}
		}
		// A text that does not prepare is not cached; running it reports
		// the error.
		if _, err := db.Exec(ctx, `SELEKT 1`); err == nil {
			t.Fatal("a malformed statement ran")
		}
	})
}

// TestStatementCacheKeepsRecentTexts: one-off texts (a multi-row
// statement's each row count) pass through a full cache without pushing
// out the text a service runs all the time.
func TestStatementCacheKeepsRecentTexts(t *testing.T) {
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.SQLite, testSchema)
	db.StatementCacheSize(4)
	const fixed = `SELECT count(*) FROM t WHERE id > $1`
	for i := range 50 {
		var n, got int
		if err := db.QueryRow(ctx, fixed, 0).Scan(&n); err != nil || n != 0 {
			t.Fatalf("fixed query: %d, %v", n, err)
		}
		if err := db.QueryRow(ctx, fmt.Sprintf(`SELECT %d + $1`, i), 1).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("one-off %d: %d, %v", i, got, err)
		}
	}
	cached := db.CachedStatements()
	if len(cached) != 4 || !slices.Contains(cached, fixed) || slices.Contains(cached, `SELECT 0 + $1`) {
		t.Fatalf("cached texts = %q; want the 4 most recent, the fixed query among them", cached)
	}
}

// TestStatementCacheEvictionUnderUse races callers over more texts than a
// two-statement cache keeps, through every kind of call (inside
// transactions too, and rows read after other callers evicted their
// statement): an evicted statement is closed only once no call runs on
// it, so none fails with a closed statement.
func TestStatementCacheEvictionUnderUse(t *testing.T) {
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.SQLite, testSchema)
	db.StatementCacheSize(2)
	for id := 1; id <= 3; id++ {
		if _, err := db.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	const callers, each, texts = 16, 60, 5
	var wg sync.WaitGroup
	errc := make(chan error, callers*each)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				k := (c + i) % texts
				q := fmt.Sprintf(`SELECT id + %d FROM t WHERE id >= $1 ORDER BY id`, k)
				if err := evictionCall(ctx, db, (c+i)%4, q, k); err != nil {
					errc <- fmt.Errorf("caller %d, call %d: %w", c, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if n := len(db.CachedStatements()); n > 2 {
		t.Errorf("%d statements cached, want at most 2", n)
	}
}

// evictionCall runs q (ids plus k, from id 1) as one of four kinds of call
// and checks what it answers.
func evictionCall(ctx context.Context, db *sqldb.DB, kind int, q string, k int) error {
	switch kind {
	case 0:
		var first int
		if err := db.QueryRow(ctx, q, 1).Scan(&first); err != nil || first != 1+k {
			return fmt.Errorf("QueryRow: %d, %v", first, err)
		}
	case 1:
		rows, err := db.Query(ctx, q, 1)
		if err != nil {
			return err
		}
		defer rows.Close()
		runtime.Gosched() // others evict the statement meanwhile
		want := 1 + k
		for rows.Next() {
			var got int
			if err := rows.Scan(&got); err != nil || got != want {
				return fmt.Errorf("Query row: %d, %v; want %d", got, err, want)
			}
			want++
		}
		if err := rows.Err(); err != nil || want != 4+k {
			return fmt.Errorf("Query: ended at %d, %v", want, err)
		}
	case 2:
		if _, err := db.Write(ctx, fmt.Sprintf(`UPDATE t SET parent = NULL WHERE id >= $1 AND %d >= 0`, k), 1); err != nil {
			return fmt.Errorf("Write: %w", err)
		}
	default:
		return db.InTx(ctx, func(tx *sqldb.Tx) error {
			var first int
			if err := tx.QueryRow(ctx, q, 2).Scan(&first); err != nil || first != 2+k {
				return fmt.Errorf("Tx.QueryRow: %d, %v", first, err)
			}
			_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE t SET parent = NULL WHERE id = $1 AND %d >= 0`, k), 3)
			return err
		})
	}
	return nil
}
