package sqldb_test

import (
	"context"
	"fmt"
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
// the ones past the bound run unprepared and still answer.
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
