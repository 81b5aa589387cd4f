package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pendingWrite is a statement Queue holds.
type pendingWrite struct {
	query string
	args  []any
}

// Queue adds a write whose result its caller does not need (an insert of
// a new row, an update by key) to the transaction. On SQLite, which
// answers in-process, it runs at once. On PostgreSQL it is held and sent
// with the transaction's next statement, or before its commit, in one
// pipeline (a pgx batch, one Sync, inside the transaction): each round
// trip is a write and a wake-up on both sides under the transaction's
// locks, so n queued writes and the read after them cost one round trip,
// not n+1. The server runs the statements in the order they were given,
// exactly as if each had been sent alone. A queued write that fails
// fails the transaction: the statement it was sent with reports the
// failure (or the server's refusal to go on in an aborted transaction),
// and InTx returns the write's own error and rolls back (on SQLite too,
// where Queue reports it at once). So Queue is for
// writes whose failure the caller would only have passed up, never for
// one whose error it inspects (a unique key it means to catch).
//
// A transaction on PostgreSQL begins the same way: its BEGIN is queued and
// goes with its first statement, and its COMMIT goes with the writes
// queued last, so a transaction of one statement and queued writes is two
// round trips, not four.
func (tx *Tx) Queue(ctx context.Context, query string, args ...any) error {
	if tx.failed != nil {
		return tx.failed
	}
	if tx.conn == nil {
		if _, err := tx.Exec(ctx, query, args...); err != nil {
			tx.failed = err
			return err
		}
		return nil
	}
	tx.pending = append(tx.pending, pendingWrite{query: tx.db.Rebind(query), args: args})
	return nil
}

// ReadRow runs a single-row query in the transaction, as QueryRow does;
// on PostgreSQL it goes in one pipeline with the writes Queue holds. The
// row is copied out of the connection and scanned with pgx's types, as
// DB.ReadRow's are: Scan reports an error matching sql.ErrNoRows when
// there is none.
func (tx *Tx) ReadRow(ctx context.Context, query string, args ...any) Row {
	ctx = tx.bound(ctx)
	if tx.conn == nil {
		return tx.QueryRow(ctx, query, args...)
	}
	var row readRow
	err := tx.send(ctx, func(b *pgx.Batch) { b.Queue(tx.db.Rebind(query), args...) }, func(br pgx.BatchResults) error {
		row = readOne(br)
		return nil
	})
	if err != nil {
		return &readRow{err: err}
	}
	return &row
}

// commit commits the transaction: on PostgreSQL the COMMIT goes with the
// queued writes, in their pipeline, and a transaction that never sent a
// statement sends nothing.
func (tx *Tx) commit(ctx context.Context) error {
	if tx.conn == nil {
		if err := tx.tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	}
	if !tx.sent && len(tx.pending) == 1 {
		// Only the BEGIN: nothing to send.
		tx.pending = nil
		return nil
	}
	err := tx.send(ctx, func(b *pgx.Batch) { b.Queue("COMMIT") }, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err == nil && tag.String() == "ROLLBACK" {
			// The server ended a failed transaction instead.
			err = pgx.ErrTxCommitRollback
		}
		return err
	})
	if err != nil && tx.failed == nil {
		return fmt.Errorf("commit: %w", err)
	}
	return err
}

// rollback ends the transaction after a failure, under a context of its
// own (the caller's may be what ended it). On PostgreSQL a connection the
// ROLLBACK does not reach stays in its transaction and is discarded by
// the pool.
func (tx *Tx) rollback(ctx context.Context) {
	if tx.conn == nil {
		_ = tx.tx.Rollback()
		return
	}
	if !tx.sent {
		return
	}
	ctx, cancel := tx.db.bound(context.WithoutCancel(ctx))
	defer cancel()
	_ = tx.conn.Raw(func(dc any) error {
		if sc, ok := dc.(*stdlib.Conn); ok {
			_, err := sc.Conn().Exec(ctx, "ROLLBACK")
			return err
		}
		return nil
	})
}

// flush sends the queued writes, if any, in one pipeline.
func (tx *Tx) flush(ctx context.Context) error {
	if len(tx.pending) == 0 {
		return tx.failed
	}
	return tx.send(ctx, nil, nil)
}

// pipeline runs a statement after the queued writes, in their pipeline.
func (tx *Tx) pipeline(ctx context.Context, query string, args []any) (sql.Result, error) {
	var n int64
	err := tx.send(ctx, func(b *pgx.Batch) { b.Queue(tx.db.Rebind(query), args...) }, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(n), nil
}

// send sends the queued writes, then what add queues, in one pipeline on
// the transaction's connection, and reads the writes' results, then
// read's. A failed queued write is kept in tx.failed and returned.
func (tx *Tx) send(ctx context.Context, add func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	if tx.failed != nil {
		return tx.failed
	}
	ws := tx.pending
	tx.pending = nil
	tx.sent = true
	return tx.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqldb: a PostgreSQL connection of type %T, not pgx's", dc)
		}
		b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(ws)+1)}
		for _, w := range ws {
			b.Queue(w.query, w.args...)
		}
		if add != nil {
			add(b)
		}
		br := sc.Conn().SendBatch(ctx, b)
		for range ws {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				tx.failed = err
				return err
			}
		}
		var err error
		if read != nil {
			err = read(br)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// Read is one single-row query of ReadRows.
type Read struct {
	Query string
	Args  []any
}

// lazyRow is a read run when it is scanned.
type lazyRow func() *sql.Row

// Scan implements Row.
func (f lazyRow) Scan(dest ...any) error { return f().Scan(dest...) }

// ReadRows runs single-row queries in the transaction, in order, and
// returns their rows, each as ReadRow's: on PostgreSQL they go in one
// pipeline with the writes Queue holds, so reads that do not depend on
// each other cost one round trip together. The first read that fails
// ends the pipeline: its row and those after it report its failure (and
// pgx reports a statement that does not parse on every row). On SQLite
// each read runs when its row is scanned.
func (tx *Tx) ReadRows(ctx context.Context, reads ...Read) []Row {
	ctx = tx.bound(ctx)
	rows := make([]Row, len(reads))
	if tx.conn == nil {
		// SQLite answers in-process: each read runs when its row is
		// scanned (an unscanned row would hold its statement).
		for i, r := range reads {
			rows[i] = lazyRow(func() *sql.Row { return tx.QueryRow(ctx, r.Query, r.Args...) })
		}
		return rows
	}
	out := make([]readRow, len(reads))
	n := 0 // the reads whose outcome was read
	err := tx.send(ctx, func(b *pgx.Batch) {
		for _, r := range reads {
			b.Queue(tx.db.Rebind(r.Query), r.Args...)
		}
	}, func(br pgx.BatchResults) error {
		for ; n < len(out); n++ {
			out[n] = readOne(br)
			if out[n].err != nil && !errors.Is(out[n].err, pgx.ErrNoRows) {
				return out[n].err
			}
		}
		return nil
	})
	for i := range rows {
		if err != nil && i >= n {
			rows[i] = &readRow{err: err}
			continue
		}
		rows[i] = &out[i]
	}
	return rows
}
