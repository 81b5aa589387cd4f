package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
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
