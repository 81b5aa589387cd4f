package sqldb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxGroup bounds how many statements share one commit.
const maxGroup = 64

// Write runs one writing statement as its own transaction: it is committed
// when Write returns nil, and nothing of it remains when Write returns an
// error.
//
// Every commit waits for the log to reach the disk (SQLite's WAL under its
// single write lock; PostgreSQL's WAL flush, whose lock is where concurrent
// commits queue: about 2,600 commits/s on the bench machine, whatever the
// number of connections). So the statements that arrive while a commit is
// under way are committed together (group commit): a leading caller runs up
// to maxGroup waiting statements in one transaction and commits once (one
// leader at a time on SQLite, two on PostgreSQL, where the group is sent in
// one pipeline: see runPipelined). BenchmarkWrite justifies it: on
// PostgreSQL, 32 writers went from 12,842–13,644 rows/s (a commit each) to
// 25,977–29,813 (bench/README.md). A Write alone runs as a plain
// autocommit statement. Every statement still succeeds or fails on its
// own: when one fails, the group is rolled back and its statements are run
// one to a transaction, so no caller gets another's failure and nothing of
// a failed statement remains. A failed commit is reported to every
// caller of its group and not retried: it may have taken effect (a
// connection lost mid-commit), exactly as for a single statement.
func (db *DB) Write(ctx context.Context, query string, args ...any) (_ sql.Result, err error) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(err) }()
	}
	return db.write(ctx, &queued{ctx: ctx, query: query, args: args})
}

// Row is the one row a WriteRow statement or a ReadRow returns: a
// *sql.Row on SQLite, pgx's row on PostgreSQL (see runPipelined and
// ReadRow), scanned with pgx's types. Scan reports an error for which
// errors.Is(err, sql.ErrNoRows) holds when there is no row.
type Row interface {
	Scan(dest ...any) error
}

// WriteRow is Write for a writing statement that returns at most one row
// (INSERT … RETURNING, or a data-modifying WITH): scan reads that row
// inside the statement's transaction, and WriteRow returns what scan
// returned once the transaction committed. A statement that returns no
// row ran all the same: scan gets an error matching sql.ErrNoRows (as
// Row.Scan reports it), which is the statement's outcome, not a failure of
// its group; any other error from scan fails the statement, and nothing of
// it remains. scan may be called more than once (a failed group runs its
// statements again, one to a transaction); only the last call's outcome
// counts, so it must assign what it reads, never accumulate.
func (db *DB) WriteRow(ctx context.Context, scan func(Row) error, query string, args ...any) (err error) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(err) }()
	}
	_, err = db.write(ctx, &queued{ctx: ctx, query: query, args: args, scan: scan})
	return err
}

func (db *DB) write(ctx context.Context, w *queued) (sql.Result, error) {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	w.ctx = ctx
	if db.writes == nil {
		// A DB not made by Open.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return db.run(ctx, nil, w)
	}
	return db.writes.do(ctx, w)
}

// group is a queue of single-statement writes sharing a commit (Write,
// WriteRow). A caller queues its statement and, while fewer than
// maxLeaders groups are under way, leads: it takes up to maxGroup queued
// statements and runs them (run), again and again while statements wait.
type group struct {
	mu      sync.Mutex
	pending []*queued
	// leaders is how many groups are under way; at most maxLeaders.
	leaders, maxLeaders int
	// run runs the statements taken together and finishes each of them.
	run func(qs []*queued)
}

const (
	queuedWaiting int32 = iota
	queuedTaken
	queuedAbandoned
)

// queued is one caller's statement in a group's queue.
type queued struct {
	ctx   context.Context
	query string
	args  []any
	scan  func(Row) error // nil for a write that returns no rows
	state atomic.Int32
	res   sql.Result
	err   error
	done  chan struct{}
}

func (q *queued) finished() bool {
	select {
	case <-q.done:
		return true
	default:
		return false
	}
}

func (q *queued) finish(res sql.Result, err error) {
	q.res, q.err = res, err
	close(q.done)
}

// do queues q and waits for its outcome, leading groups when it may.
func (g *group) do(ctx context.Context, q *queued) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.done = make(chan struct{})
	g.mu.Lock()
	g.pending = append(g.pending, q)
	lead := g.leaders < g.maxLeaders
	if lead {
		g.leaders++
	}
	g.mu.Unlock()
	if lead {
		g.lead(q)
	}
	select {
	case <-q.done:
		return q.res, q.err
	case <-ctx.Done():
		// Abandon the statement unless a leader has taken it; once taken
		// it runs, and the caller must learn its outcome (a write may have
		// committed; a read's scan fills in the caller's variables).
		if q.state.CompareAndSwap(queuedWaiting, queuedAbandoned) {
			return nil, ctx.Err()
		}
		<-q.done
		return q.res, q.err
	}
}

// lead runs groups while statements wait. The leader is a caller's
// goroutine: once its own statement is done and more are waiting, it hands
// the queue to a new goroutine rather than keep its caller waiting.
func (g *group) lead(own *queued) {
	for {
		g.mu.Lock()
		n := min(len(g.pending), maxGroup)
		if n == 0 {
			g.leaders--
			g.pending = nil
			g.mu.Unlock()
			return
		}
		if own != nil && own.finished() {
			g.mu.Unlock()
			go g.lead(nil)
			return
		}
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()
		taken := make([]*queued, 0, n)
		for _, q := range batch {
			if err := q.ctx.Err(); err != nil && q.state.CompareAndSwap(queuedWaiting, queuedAbandoned) {
				q.finish(nil, err)
				continue
			}
			if q.state.CompareAndSwap(queuedWaiting, queuedTaken) {
				taken = append(taken, q)
			}
		}
		if len(taken) > 0 {
			g.run(taken)
		}
	}
}

// commitGroup runs ws in one transaction (on SQLite under the process's
// write slot) and tells each caller its outcome.
func (db *DB) commitGroup(ws []*queued) {
	if db.writer != nil {
		db.writer <- struct{}{}
		defer db.releaseWriter()
	}
	// The group's transaction outlives any one caller's context: a caller
	// that gives up while its statement runs still learns the outcome. It
	// has the pool's own bound, so a database that hangs frees the leader.
	ctx, cancel := db.bound(context.WithoutCancel(ws[0].ctx))
	defer cancel()
	if len(ws) == 1 && ws[0].scan == nil {
		// Nothing can fail after the statement has run: autocommit.
		ws[0].finish(db.run(ctx, nil, ws[0]))
		return
	}
	results := make([]sql.Result, len(ws))
	outcomes := make([]error, len(ws)) // sql.ErrNoRows, for a WriteRow that matched nothing
	stmtErr, groupErr := db.runGroup(ctx, ws, results, outcomes)
	for i, w := range ws {
		switch {
		case groupErr != nil:
			w.finish(nil, groupErr)
		case stmtErr != nil && len(ws) > 1:
			// A statement failed: nothing of the group is kept; run each
			// alone, so each gets its own outcome.
			w.finish(db.writeAlone(w))
		case stmtErr != nil:
			w.finish(nil, stmtErr)
		default:
			w.finish(results[i], outcomes[i])
		}
	}
}

// writeAlone runs w in a transaction of its own; the caller holds the
// write slot.
func (db *DB) writeAlone(w *queued) (sql.Result, error) {
	results, outcomes := make([]sql.Result, 1), make([]error, 1)
	ctx, cancel := db.bound(context.WithoutCancel(w.ctx))
	defer cancel()
	stmtErr, groupErr := db.runGroup(ctx, []*queued{w}, results, outcomes)
	if err := cmp.Or(stmtErr, groupErr); err != nil {
		return nil, err
	}
	return results[0], outcomes[0]
}

// runGroup runs ws in one transaction, filling in each statement's result
// and outcome. stmtErr is the first statement's failure, after which the
// transaction was rolled back; groupErr is a failure to begin or commit,
// which may have taken effect (a connection lost mid-commit).
func (db *DB) runGroup(ctx context.Context, ws []*queued, results []sql.Result, outcomes []error) (stmtErr, groupErr error) {
	if db.Engine == Postgres {
		return db.runPipelined(ctx, ws, results, outcomes)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	for i, w := range ws {
		results[i], err = db.run(ctx, tx, w)
		if w.scan != nil && errors.Is(err, sql.ErrNoRows) {
			outcomes[i], err = err, nil
		}
		if err != nil {
			_ = tx.Rollback()
			return err, nil
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return nil, nil
}

// run executes w's statement in tx, or on its own when tx is nil. For a
// WriteRow it returns what the scan returned.
func (db *DB) run(ctx context.Context, tx *sql.Tx, w *queued) (sql.Result, error) {
	cached, q := db.stmt(ctx, w.query)
	var s *sql.Stmt
	if cached != nil {
		defer cached.release()
		s = cached.Stmt
		if tx != nil {
			s = tx.StmtContext(ctx, s)
		}
	}
	if w.scan == nil {
		switch {
		case s != nil:
			return s.ExecContext(ctx, w.args...)
		case tx != nil:
			return tx.ExecContext(ctx, q, w.args...)
		}
		return db.DB.ExecContext(ctx, q, w.args...)
	}
	var row *sql.Row
	switch {
	case s != nil:
		row = s.QueryRowContext(ctx, w.args...)
	case tx != nil:
		row = tx.QueryRowContext(ctx, q, w.args...)
	default:
		row = db.DB.QueryRowContext(ctx, q, w.args...)
	}
	return nil, w.scan(row)
}
