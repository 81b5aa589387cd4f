package sqldb

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// maxPipeline bounds how many reads share one pipeline: a pipeline holds
// one connection until its last result is read, and the first read's
// caller waits for the whole of it.
const maxPipeline = 32

// ReadRow runs a point read (a query returning at most one row, outside a
// transaction) and returns its row, as QueryRow does: Scan reports an
// error matching sql.ErrNoRows when there is none, and the read's failure
// otherwise.
//
// On PostgreSQL the reads that arrive together are coalesced (decision
// 0016): each query costs a round trip, a write and a wake-up on both
// sides, and under load those cost more than the query. At most
// GOMAXPROCS pipelines are under way at once; a read that finds one free
// is sent at once, and the reads that arrive meanwhile go together in the
// next pipeline (a pgx batch, one Sync) on one connection, up to
// maxPipeline of them. Each read keeps its own outcome: the server skips
// what follows a failed statement up to the Sync, so the read that failed
// and those after it are run again by their callers, each alone, and a
// failure reaches only its own caller. The row is copied out of the
// connection and scanned by the caller, with pgx's types as WriteRow's
// rows are. A caller whose context ends gets the context's error at once,
// queued or sent; its read is dropped if not yet sent, and a pipeline is
// stopped only when every caller in it has given up. On SQLite, which
// answers in-process, ReadRow is QueryRow.
func (db *DB) ReadRow(ctx context.Context, query string, args ...any) (row Row) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() {
			err := rowErr(row)
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			done(err)
		}()
	}
	if db.reads == nil {
		return db.queryRow(ctx, query, args...)
	}
	ctx, cancel := db.bound(ctx)
	defer cancel()
	r := &pendingRead{ctx: ctx, query: query, args: args, done: make(chan struct{})}
	if err := ctx.Err(); err != nil {
		return &readRow{err: err}
	}
	db.reads.do(db, r)
	select {
	case <-r.done:
	case <-ctx.Done():
		// Dropped if no pipeline took it yet; a pipeline that did runs it
		// for its other callers, and its outcome goes unread.
		r.state.CompareAndSwap(readWaiting, readAbandoned)
		return &readRow{err: ctx.Err()}
	}
	if r.again {
		// Its pipeline failed at or before this read: run it alone.
		db.reads.runAlone(db, r)
	}
	return &r.row
}

// rowErr is the error a row reports before it is scanned.
func rowErr(row Row) error {
	switch r := row.(type) {
	case *readRow:
		return r.err
	case interface{ Err() error }:
		return r.Err()
	}
	return nil
}

// readRow is a PostgreSQL read's outcome: its row, copied out of the
// connection, or its error (pgx.ErrNoRows when it found none).
type readRow struct {
	fields []pgconn.FieldDescription
	values [][]byte
	err    error
}

// typeMaps holds pgx type maps for scanning read rows: a map caches its
// scan plans and is not safe for concurrent use.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// Scan implements Row.
func (r *readRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	return pgx.ScanRow(m, r.fields, r.values, dest...)
}

const (
	readWaiting int32 = iota
	readTaken
	readAbandoned
)

// pendingRead is one caller's read in the queue.
type pendingRead struct {
	ctx   context.Context
	query string
	args  []any
	state atomic.Int32
	// row is the outcome, set before done is closed; again says the read
	// must run alone instead.
	row   readRow
	again bool
	done  chan struct{}
}

func (r *pendingRead) finish(row readRow) {
	r.row = row
	close(r.done)
}

// readQueue coalesces PostgreSQL's point reads into pipelines (see
// ReadRow).
type readQueue struct {
	mu      sync.Mutex
	pending []*pendingRead
	// running is how many pipelines are under way; at most maxRunning.
	running, maxRunning int
	// What was sent (see ReadStats).
	pipelines, reads, largest, again atomic.Int64
}

// ReadStats is what ReadRow has sent to PostgreSQL since the DB was made
// (zero on SQLite, where nothing is coalesced): Pipelines sent, the Reads
// in them, the most reads in one (Largest), and the reads run Again alone
// after a failure in their pipeline. Reads/Pipelines is how many round
// trips coalescing saved.
type ReadStats struct{ Pipelines, Reads, Largest, Again int64 }

// ReadStats reports what ReadRow has sent.
func (db *DB) ReadStats() ReadStats {
	q := db.reads
	if q == nil {
		return ReadStats{}
	}
	return ReadStats{q.pipelines.Load(), q.reads.Load(), q.largest.Load(), q.again.Load()}
}

// do queues r and, while fewer than maxRunning pipelines are under way,
// starts a sender. The sender is a goroutine of its own, never a caller's,
// so every caller waits only in ReadRow, where its context can end the
// wait.
func (q *readQueue) do(db *DB, r *pendingRead) {
	q.mu.Lock()
	q.pending = append(q.pending, r)
	lead := q.running < q.maxRunning
	if lead {
		q.running++
	}
	q.mu.Unlock()
	if lead {
		go q.lead(db)
	}
}

// lead sends pipelines while reads wait.
func (q *readQueue) lead(db *DB) {
	for {
		q.mu.Lock()
		n := min(len(q.pending), maxPipeline)
		if n == 0 {
			q.running--
			q.pending = nil
			q.mu.Unlock()
			return
		}
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		q.mu.Unlock()
		taken := batch[:0]
		for _, r := range batch {
			if r.state.CompareAndSwap(readWaiting, readTaken) {
				taken = append(taken, r)
			}
		}
		if len(taken) > 0 {
			q.send(db, taken)
		}
	}
}

// send runs rs in one pipeline and finishes each: with its row, or, from
// the first read that fails on, with again set (the failure may not be its
// own: pgx reports a statement of the batch that does not parse on every
// read, and the server skips every statement after a failed one).
func (q *readQueue) send(db *DB, rs []*pendingRead) {
	q.pipelines.Add(1)
	q.reads.Add(int64(len(rs)))
	for n := int64(len(rs)); ; {
		if l := q.largest.Load(); l >= n || q.largest.CompareAndSwap(l, n) {
			break
		}
	}
	ctx, stop := anyWaiting(rs)
	defer stop()
	next := 0
	err := db.withPgx(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(rs))}
		for _, r := range rs {
			b.Queue(r.query, r.args...)
		}
		br := c.SendBatch(ctx, b)
		defer br.Close()
		for ; next < len(rs); next++ {
			row := readOne(br)
			if row.err != nil && !errors.Is(row.err, pgx.ErrNoRows) && len(rs) > 1 {
				return nil
			}
			rs[next].finish(row)
		}
		return nil
	})
	for _, r := range rs[next:] {
		if err != nil {
			// No connection: nothing was sent.
			r.finish(readRow{err: err})
			continue
		}
		r.again = true
		close(r.done)
	}
}

// runAlone runs r in a pipeline of its own, under its caller's context.
func (q *readQueue) runAlone(db *DB, r *pendingRead) {
	q.again.Add(1)
	r.again = false
	r.done = make(chan struct{})
	q.send(db, []*pendingRead{r})
}

// readOne reads the next result of br as a point read's outcome.
func readOne(br pgx.BatchResults) readRow {
	rows, err := br.Query()
	if err != nil {
		return readRow{err: err}
	}
	var row readRow
	if rows.Next() {
		row.fields = slices.Clone(rows.FieldDescriptions())
		row.values = copyValues(rows.RawValues())
	}
	rows.Close()
	switch err := rows.Err(); {
	case err != nil:
		return readRow{err: err}
	case row.values == nil:
		return readRow{err: pgx.ErrNoRows}
	}
	return row
}

// copyValues copies a row's raw values out of the connection's buffer, in
// one allocation, keeping NULL (nil) apart from empty.
func copyValues(raw [][]byte) [][]byte {
	n := 0
	for _, v := range raw {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(raw))
	for i, v := range raw {
		if v != nil {
			start := len(buf)
			buf = append(buf, v...)
			out[i] = buf[start:len(buf):len(buf)]
		}
	}
	return out
}

// anyWaiting returns a context that is done once every one of rs's
// callers' contexts is: a pipeline outlives a caller that gives up, not
// all of them. stop releases it.
func anyWaiting(rs []*pendingRead) (ctx context.Context, stop func()) {
	if len(rs) == 1 {
		return rs[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(rs[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(rs)))
	stops := make([]func() bool, len(rs))
	for i, r := range rs {
		stops[i] = context.AfterFunc(r.ctx, func() {
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
