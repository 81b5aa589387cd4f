package sqldb

// StatementCacheSize replaces db's statement cache (SQLite) with an empty
// one of n statements, so a test can pass its bound with a few texts.
func (db *DB) StatementCacheSize(n int) {
	if db.stmts == nil {
		return
	}
	db.stmts = newStmtCache(n)
}

// CachedStatements are the texts in db's statement cache, the most
// recently used first; nil on PostgreSQL.
func (db *DB) CachedStatements() []string {
	c := db.stmts
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := c.lru.Keys() // oldest first
	for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
		keys[i], keys[j] = keys[j], keys[i]
	}
	return keys
}

// MaxPipeline is how many reads share one pipeline at most.
const MaxPipeline = maxPipeline

// ReadPipelinesAtOnce sets how many pipelines may be under way at once
// (GOMAXPROCS by default); set it before db is used.
func (db *DB) ReadPipelinesAtOnce(n int) {
	if db.reads != nil {
		db.reads.maxRunning = n
	}
}

// ReadsQueued is how many reads wait for a pipeline.
func (db *DB) ReadsQueued() int {
	if db.reads == nil {
		return 0
	}
	db.reads.mu.Lock()
	defer db.reads.mu.Unlock()
	return len(db.reads.pending)
}
