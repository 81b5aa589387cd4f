package sqldb

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds the statement cache: the platform's SQL is a
// fixed set of texts, but a query built on the fly (a multi-row insert, a
// filter combination) must not grow the cache without bound. Past the
// bound, a new text simply runs unprepared.
const maxCachedStatements = 512

// stmtCache keeps one prepared statement per query text for SQLite.
// Preparing (parsing and planning) is where SQLite spends most of a short
// query's time, and modernc.org/sqlite finalizes what it prepared for a
// one-off query; a prepared *sql.Stmt is instead prepared once per pooled
// connection and reset after each use, which also releases the read
// snapshot, so a cached statement holds no lock between uses. PostgreSQL
// needs none of this: pgx keeps its own per-connection statement cache.
// BenchmarkQueryRow/sqlite justifies it (Cached against Unprepared); in the
// load harness it doubled SQLite's reads and put their p99 under 10 ms
// (bench/README.md).
type stmtCache struct {
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

// stmt returns the prepared statement for query, or nil and the text to
// run unprepared: not SQLite, the cache full, or the text does not prepare
// (then running it reports the error as usual). The cache is keyed by the
// caller's text, so a hit does not rebind it: on SQLite's reads the
// rebound copy was 8% of the bytes a request allocated.
func (db *DB) stmt(ctx context.Context, query string) (*sql.Stmt, string) {
	c := db.stmts
	if c == nil {
		return nil, db.Rebind(query)
	}
	c.mu.RLock()
	s, ok := c.stmts[query]
	full := len(c.stmts) >= maxCachedStatements
	c.mu.RUnlock()
	if ok {
		return s, ""
	}
	q := db.Rebind(query)
	if full {
		return nil, q
	}
	prepared, err := db.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil, q
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts[query]; ok {
		// Another caller prepared the same text meanwhile: keep one.
		prepared.Close()
		return s, ""
	}
	if len(c.stmts) >= maxCachedStatements {
		prepared.Close()
		return nil, q
	}
	c.stmts[query] = prepared
	return prepared, ""
}

// Close stops the checkpointer, then closes the cached statements and the
// pool.
func (db *DB) Close() error {
	db.stopCheckpointer()
	if c := db.stmts; c != nil {
		c.mu.Lock()
		for q, s := range c.stmts {
			s.Close()
			delete(c.stmts, q)
		}
		c.mu.Unlock()
	}
	return db.DB.Close()
}
