package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// ReadRow runs a query that returns at most one row, outside a
// transaction, and returns what scan returned: scan gets the row, or an
// error matching sql.ErrNoRows when there is none (as Row.Scan reports
// it), and whatever it returns is the read's outcome.
//
// On PostgreSQL each query is a round trip: a write that wakes a backend
// and a write that wakes this process again, which on a machine short of
// cores cost more than the query itself. So reads are sent in pipelines
// (runReads), one pipeline per core at most under way (on two cores, four
// measured slower than two or one): a read that finds one free goes at
// once, alone, and the reads that arrive meanwhile go together in the
// next, up to maxGroup on one connection. Each read still has its own
// outcome: one that fails, on the server or in its scan, fails alone. On
// SQLite, which answers in-process, ReadRow is QueryRow and scan.
//
// A caller whose context ends before its read is taken gets the context's
// error; once taken, the read runs (scan fills in the caller's variables)
// and ReadRow returns its outcome. A pipeline stops once every caller in
// it has given up. scan may be called more than once (a read after a
// failure in its pipeline runs again alone); only the last call's outcome
// counts, so it must assign what it reads, never accumulate.
func (db *DB) ReadRow(ctx context.Context, scan func(Row) error, query string, args ...any) error {
	if db.reads == nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		return scan(db.QueryRow(ctx, query, args...))
	}
	_, err := db.reads.do(ctx, &queued{ctx: ctx, query: query, args: args, scan: scan})
	return err
}

// runReads sends qs to PostgreSQL in one pipeline (a pgx batch, one Sync)
// and finishes each with its scan's outcome. The server skips what
// follows a failed statement up to the Sync, so from the first failure on
// the reads run alone, each on its own round trip (reads can run twice;
// scan, as for WriteRow, must assign what it reads, never accumulate).
func (db *DB) runReads(qs []*queued) {
	ctx, stop := anyWaiting(qs)
	defer stop()
	rest := qs
	err := db.withPgx(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		for _, q := range qs {
			b.Queue(q.query, q.args...)
		}
		br := c.SendBatch(ctx, b)
		defer br.Close()
		for len(rest) > 0 {
			err := rest[0].scan(br.QueryRow())
			if err != nil && !errors.Is(err, sql.ErrNoRows) && len(qs) > 1 {
				// Not necessarily this read's own failure (pgx reports a
				// statement of the batch that does not parse on every
				// read): it and the reads after it run alone.
				return nil
			}
			rest[0].finish(nil, err)
			rest = rest[1:]
		}
		return nil
	})
	if err != nil {
		// No connection: nothing was sent.
		for _, q := range qs {
			q.finish(nil, err)
		}
		return
	}
	for _, q := range rest {
		q.finish(nil, q.scan(db.QueryRow(ctx, q.query, q.args...)))
	}
}

// anyWaiting returns a context that is done once every one of qs's
// callers' contexts is: a pipeline outlives a caller that gives up, not
// all of them. stop releases it.
func anyWaiting(qs []*queued) (ctx context.Context, stop func()) {
	if len(qs) == 1 {
		return qs[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(qs[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(qs)))
	stops := make([]func() bool, len(qs))
	for i, q := range qs {
		stops[i] = context.AfterFunc(q.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
