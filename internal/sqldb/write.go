package sqldb

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// maxGroup bounds how many single-statement writes share one commit.
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
// leader at a time on SQLite, two on PostgreSQL). A statement alone runs as
// a plain autocommit statement. Every statement still succeeds or fails on
// its own: when one fails, the group is rolled back and its statements are
// run one to a transaction, so no caller gets another's failure and nothing
// of a failed statement remains. A failed commit is reported to every
// caller of its group and not retried: it may have taken effect (a
// connection lost mid-commit), exactly as for a single statement.
func (db *DB) Write(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if db.group == nil {
		// A DB not made by Open.
		return db.Exec(ctx, query, args...)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &groupWrite{ctx: ctx, query: query, args: args, done: make(chan struct{})}
	g := db.group
	g.mu.Lock()
	g.pending = append(g.pending, w)
	lead := g.leaders < g.maxLeaders
	if lead {
		g.leaders++
	}
	g.mu.Unlock()
	if lead {
		db.leadGroups(w)
	}
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
		// Abandon the write unless a leader has taken it; once taken it
		// either commits or not, and the caller must learn which.
		if w.state.CompareAndSwap(writeWaiting, writeAbandoned) {
			return nil, ctx.Err()
		}
		<-w.done
		return w.res, w.err
	}
}

// writeGroup is the queue of single-statement writes.
type writeGroup struct {
	mu      sync.Mutex
	pending []*groupWrite
	// leaders is how many groups are being committed; at most maxLeaders
	// (one on SQLite, which has one writer; two on PostgreSQL, so a group
	// fills while the one before it commits).
	leaders, maxLeaders int
}

const (
	writeWaiting int32 = iota
	writeTaken
	writeAbandoned
)

type groupWrite struct {
	ctx   context.Context
	query string
	args  []any
	state atomic.Int32
	res   sql.Result
	err   error
	done  chan struct{}
}

func (w *groupWrite) finished() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *groupWrite) finish(res sql.Result, err error) {
	w.res, w.err = res, err
	close(w.done)
}

// leadGroups commits groups while statements wait. The leader is a
// caller's goroutine: once its own write is done and more are waiting, it
// hands the queue to a new goroutine rather than keep its caller waiting.
func (db *DB) leadGroups(own *groupWrite) {
	g := db.group
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
			go db.leadGroups(nil)
			return
		}
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()
		taken := make([]*groupWrite, 0, n)
		for _, w := range batch {
			if err := w.ctx.Err(); err != nil && w.state.CompareAndSwap(writeWaiting, writeAbandoned) {
				w.finish(nil, err)
				continue
			}
			if w.state.CompareAndSwap(writeWaiting, writeTaken) {
				taken = append(taken, w)
			}
		}
		if len(taken) > 0 {
			db.commitGroup(taken)
		}
	}
}

// commitGroup runs ws in one transaction (on SQLite under the process's
// write slot).
func (db *DB) commitGroup(ws []*groupWrite) {
	if db.writer != nil {
		db.writer <- struct{}{}
		defer func() { <-db.writer }()
	}
	// The group's transaction outlives any one caller's context: a caller
	// that gives up while its statement runs still learns the outcome.
	ctx := context.WithoutCancel(ws[0].ctx)
	if len(ws) == 1 {
		ws[0].finish(db.Exec(ctx, ws[0].query, ws[0].args...))
		return
	}
	results := make([]sql.Result, len(ws))
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		for _, w := range ws {
			w.finish(nil, err)
		}
		return
	}
	for i, w := range ws {
		q := db.Rebind(w.query)
		if s := db.stmt(ctx, q); s != nil {
			results[i], err = tx.StmtContext(ctx, s).ExecContext(ctx, w.args...)
		} else {
			results[i], err = tx.ExecContext(ctx, q, w.args...)
		}
		if err != nil {
			// A statement failed: nothing of the group is kept; run each
			// alone, so each gets its own outcome.
			_ = tx.Rollback()
			for _, w := range ws {
				w.finish(db.writeAlone(w))
			}
			return
		}
	}
	err = tx.Commit()
	for i, w := range ws {
		if err != nil {
			w.finish(nil, err)
		} else {
			w.finish(results[i], nil)
		}
	}
}

// writeAlone runs w in a transaction of its own; the caller holds the
// write slot.
func (db *DB) writeAlone(w *groupWrite) (sql.Result, error) {
	ctx := context.WithoutCancel(w.ctx)
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, db.Rebind(w.query), w.args...)
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}
