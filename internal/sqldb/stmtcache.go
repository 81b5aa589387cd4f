package sqldb

import (
	"context"
	"database/sql"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxCachedStatements bounds the statement cache. The platform's SQL is
// mostly a fixed set of texts, but a multi-row statement is a new text
// for each row count (a claim, a record, an enqueue), which can run to
// hundreds in courier: the cache keeps the texts used most recently, so
// the fixed queries a service runs all the time stay prepared however
// many one-off texts pass through.
const maxCachedStatements = 512

// stmtCache keeps prepared statements for SQLite, by query text, the
// least recently used evicted past its bound. Preparing (parsing and
// planning) is where SQLite spends most of a short query's time, and
// modernc.org/sqlite finalizes what it prepared for a one-off query; a
// prepared *sql.Stmt is instead prepared once per pooled connection and
// reset after each use, which also releases the read snapshot, so a
// cached statement holds no lock between uses. PostgreSQL needs none of
// this: pgx keeps its own per-connection statement cache.
// BenchmarkQueryRow/sqlite justifies it (Cached against Unprepared); in the
// load harness it doubled SQLite's reads and put their p99 under 10 ms
// (bench/README.md).
type stmtCache struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, *cachedStmt]
	// idle are statements evicted while no call ran on them, closed once
	// mu is released.
	idle []*sql.Stmt
}

// cachedStmt is a cached statement and the calls running on it: an
// evicted statement is closed when its last call returns, never under
// one. Rows a call returned keep the statement alive by themselves
// (database/sql finalizes a closed statement after its last Rows).
type cachedStmt struct {
	*sql.Stmt
	cache   *stmtCache
	uses    int  // guarded by cache.mu
	evicted bool // guarded by cache.mu
}

func newStmtCache(size int) *stmtCache {
	c := &stmtCache{}
	c.lru, _ = simplelru.NewLRU(size, func(_ string, s *cachedStmt) {
		s.evicted = true
		if s.uses == 0 {
			c.idle = append(c.idle, s.Stmt)
		}
	})
	return c
}

// stmt returns the cached statement for query, preparing it on a miss,
// or nil and the text to run unprepared: not SQLite, or the text does not
// prepare (then running it reports the error as usual). A statement it
// returns must be released once the call on it has returned. The cache
// is keyed by the caller's text, so a hit does not rebind it: on SQLite's
// reads the rebound copy was 8% of the bytes a request allocated.
func (db *DB) stmt(ctx context.Context, query string) (*cachedStmt, string) {
	c := db.stmts
	if c == nil {
		return nil, db.Rebind(query)
	}
	c.mu.Lock()
	if s, ok := c.lru.Get(query); ok {
		s.uses++
		c.mu.Unlock()
		return s, ""
	}
	c.mu.Unlock()
	q := db.Rebind(query)
	prepared, err := db.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil, q
	}
	c.mu.Lock()
	s, raced := c.lru.Get(query)
	if !raced {
		s = &cachedStmt{Stmt: prepared, cache: c}
		c.lru.Add(query, s)
	}
	s.uses++
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	if raced {
		// Another caller prepared the same text meanwhile: keep one.
		prepared.Close()
	}
	for _, st := range idle {
		st.Close()
	}
	return s, ""
}

// release ends a call on s, closing s if it was evicted meanwhile.
func (s *cachedStmt) release() {
	c := s.cache
	c.mu.Lock()
	s.uses--
	closing := s.evicted && s.uses == 0
	c.mu.Unlock()
	if closing {
		s.Stmt.Close()
	}
}

// Close stops the checkpointer, then closes the cached statements and the
// pool.
func (db *DB) Close() error {
	db.stopCheckpointer()
	if c := db.stmts; c != nil {
		c.mu.Lock()
		c.lru.Purge()
		idle := c.idle
		c.idle = nil
		c.mu.Unlock()
		for _, st := range idle {
			st.Close()
		}
	}
	return db.DB.Close()
}
