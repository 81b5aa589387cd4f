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

// runPipelined is runGroup on PostgreSQL. BEGIN and the group's
// statements go to the server together (a pgx batch: one pipeline, one
// Sync), and COMMIT follows once every result has been read, so a group of
// n statements costs two round trips rather than n+2; each round trip is a
// write and a wake-up on both sides, and the leader held the group's
// connection through all of them. COMMIT is not pipelined with the rest:
// a scan that fails in this process must still be able to roll its group
// back.
func (db *DB) runPipelined(ctx context.Context, ws []*queued, results []sql.Result, outcomes []error) (stmtErr, groupErr error) {
	err := db.withPgx(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		for _, w := range ws {
			b.Queue(w.query, w.args...)
		}
		br := c.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			// BEGIN's result: no statement ran, as for a failed BeginTx
			// on SQLite. Close ends the transaction when BEGIN left none.
			_ = br.Close()
			groupErr = fmt.Errorf("begin: %w", err)
			return nil
		}
		stmtErr = readStatements(br, ws, results, outcomes)
		if cerr := br.Close(); stmtErr == nil {
			stmtErr = cerr
		}
		if stmtErr != nil {
			// A connection left in a transaction is discarded by the pool
			// (pgx's stdlib refuses it at reset), so a failed rollback
			// cannot leak the group into the next caller's work.
			_ = br.Tx().Rollback(ctx)
			return nil
		}
		if err := br.Tx().Commit(ctx); err != nil {
			groupErr = fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stmtErr, groupErr
}

// withPgx runs f on one of the pool's connections as pgx's own (batches,
// one pipeline each, are pgx's, not database/sql's) and returns f's error,
// or the error that kept f from running.
func (db *DB) withPgx(ctx context.Context, f func(c *pgx.Conn) error) error {
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqldb: a PostgreSQL connection of type %T, not pgx's", dc)
		}
		return f(c.Conn())
	})
}

// readStatements reads the results of a group's statements in order, one
// per statement, after BEGIN's. It stops at the first statement that
// failed, on the server or in its scan.
func readStatements(br pgx.BatchResults, ws []*queued, results []sql.Result, outcomes []error) error {
	for i, w := range ws {
		if w.scan == nil {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			results[i] = driver.RowsAffected(tag.RowsAffected())
			continue
		}
		switch err := w.scan(br.QueryRow()); {
		case errors.Is(err, sql.ErrNoRows):
			outcomes[i] = err
		case err != nil:
			return err
		}
	}
	return nil
}
