// Package sqldb opens the platform's two storage engines behind one small
// seam: PostgreSQL (production) and SQLite (the embedded default). Services
// write plain SQL with PostgreSQL placeholders ($1, $2, …); the seam rewrites
// them for SQLite and supplies the few clauses the engines spell differently.
//
// Two mechanisms sit behind the seam, invisible to the stores: writes
// commit in groups (Write, WriteRow; decision 0002), and on PostgreSQL
// point reads that arrive together share a pipeline (ReadRow; decision
// 0016).
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Engine names a storage engine.
type Engine string

const (
	Postgres Engine = "postgres"
	SQLite   Engine = "sqlite"
)

// DB is a connection pool for one service's database.
type DB struct {
	*sql.DB
	Engine Engine

	// Now is the clock transactions read when they begin. Tests replace it.
	Now func() time.Time

	// writer queues this process's SQLite transactions (each takes the
	// database's write lock when it begins). Waiting here is first come,
	// first served and cancellable; SQLite's own busy handler polls with
	// sleeps, so under a burst some writers would sleep past the busy
	// timeout while others got in. The busy timeout still covers other
	// processes (an operator command next to a running service).
	writer chan struct{}

	// stmts caches SQLite's prepared statements (see stmtCache).
	stmts *stmtCache
	// writes queues single-statement writes (see Write).
	writes *group
	// reads coalesces point reads on PostgreSQL (see ReadRow); nil on
	// SQLite.
	reads *readQueue
	// timeout bounds each call's database work (see Options).
	timeout time.Duration
	// ckpt checkpoints SQLite's write-ahead log (see checkpointer).
	ckpt *checkpointer

	// Observer, when set, sees every operation (see Observer). Set it
	// before the DB is used.
	Observer Observer
}

// ParseURL maps DATABASE_URL to an engine and a driver data source name.
// Accepted forms: postgres://…, postgresql://…, sqlite:PATH (a leading //
// after "sqlite:" is dropped, so sqlite:///var/lib/x.db names /var/lib/x.db).
func ParseURL(raw string) (Engine, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := pgconn.ParseConfig(raw); err != nil {
			return "", "", fmt.Errorf("not a valid PostgreSQL URL")
		}
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "//")
		if path == "" {
			return "", "", fmt.Errorf("sqlite: needs a file path, as in sqlite:data/identity.db")
		}
		return SQLite, sqliteDSN(path), nil
	default:
		return "", "", fmt.Errorf("must be a postgres://…, postgresql://… or sqlite:PATH URL")
	}
}

// sqliteDSN turns on WAL, foreign keys, in-memory temporary storage and a
// busy timeout for every connection, leaves checkpoints to the DB's
// checkpointer (see checkpointer), and makes every transaction take the
// write lock when it begins:
// a deferred transaction that reads and then writes can fail with SQLITE_BUSY
// without waiting, because SQLite cannot upgrade its lock while another writer
// holds one.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", autocheckpointPages))
	// Statement journals and sorts in memory rather than in temporary
	// files: a multi-row UPDATE otherwise writes one per statement.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

// DefaultTimeout is DATABASE_TIMEOUT's default: the bound of every call's
// database work in a service.
const DefaultTimeout = 5 * time.Second

// Options are a pool's settings beyond its URL.
type Options struct {
	// Timeout bounds each call's database work (DATABASE_TIMEOUT): every
	// call runs under a context deadline this far away and, on PostgreSQL,
	// every statement under the same statement_timeout, so a database that
	// hangs costs a request a 503 rather than a hung connection. Zero
	// leaves calls unbounded, as the migrate and operator commands want.
	Timeout time.Duration
}

// New returns a pool for rawURL without connecting: a service starts even
// when its database is down (see Gate). Only a malformed URL is an error.
func New(rawURL string, opts Options) (*DB, error) {
	engine, dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var pool *sql.DB
	if engine == Postgres {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, errors.New("not a valid PostgreSQL URL")
		}
		if opts.Timeout > 0 {
			if _, set := cfg.RuntimeParams["statement_timeout"]; !set {
				cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.Timeout.Milliseconds(), 10)
			}
			if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > opts.Timeout {
				cfg.ConnectTimeout = opts.Timeout
			}
		}
		pool = stdlib.OpenDB(*cfg)
		// A few backends per core: every commit queues on the one WAL
		// flush anyway, and more connections only add context switches
		// and lock convoys (grant/revoke pairs: 994/s with 32, 1,116/s
		// with 12 on two cores).
		n := 4*runtime.GOMAXPROCS(0) + 4
		pool.SetMaxOpenConns(n)
		pool.SetMaxIdleConns(n)
		pool.SetConnMaxIdleTime(5 * time.Minute)
	} else {
		if err := createPrivate(sqlitePath(rawURL)); err != nil {
			return nil, err
		}
		if pool, err = sql.Open("sqlite", dsn); err != nil {
			return nil, err
		}
		// Readers run in parallel under WAL; writers queue on the busy timeout.
		pool.SetMaxOpenConns(8)
		pool.SetMaxIdleConns(8)
	}
	db := &DB{DB: pool, Engine: engine, Now: time.Now, timeout: opts.Timeout}
	db.writes = &group{maxLeaders: 2, run: db.commitGroup}
	if engine == Postgres {
		db.reads = &readQueue{maxRunning: runtime.GOMAXPROCS(0)}
	}
	if engine == SQLite {
		db.writer = make(chan struct{}, 1)
		db.stmts = newStmtCache(maxCachedStatements)
		db.writes.maxLeaders = 1
		db.startCheckpointer()
	}
	return db, nil
}

// Open is New with no bound on calls, for commands (migrate, staff, keys)
// that must reach the database before they do anything: it fails when the
// database does not answer within DefaultTimeout.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	db, err := New(rawURL, Options{})
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", db.Engine, err)
	}
	return db, nil
}

// sqlitePath is the file a sqlite: DATABASE_URL names.
func sqlitePath(rawURL string) string {
	return strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "//")
}

// createPrivate creates the database file readable by its owner only
// before SQLite opens it: it holds password hashes, sealed keys and
// replays, and SQLite gives its -wal and -shm files the database file's
// mode. An existing file keeps the mode its operator gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

// Ready reports whether the database answers within two seconds.
func (db *DB) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// Rebind rewrites PostgreSQL placeholders ($1) into SQLite's numbered form
// (?1), which binds by number exactly as PostgreSQL does.
func (db *DB) Rebind(query string) string {
	if db.Engine != SQLite || !strings.Contains(query, "$") {
		return query
	}
	b := []byte(query)
	for i := 0; i < len(b)-1; i++ {
		if b[i] == '$' && b[i+1] >= '0' && b[i+1] <= '9' {
			b[i] = '?'
		}
	}
	return string(b)
}

// ForUpdate is the row-locking suffix of a SELECT inside a transaction.
// SQLite needs none: its transactions hold the database's write lock.
func (db *DB) ForUpdate() string {
	if db.Engine == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// SkipLocked is ForUpdate for claim queries shared by several workers.
func (db *DB) SkipLocked() string {
	if db.Engine == Postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// bound returns ctx under the pool's deadline and its release.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if db.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.timeout)
}

// boundRead is bound for a call whose result is read after it returns (a
// *sql.Row, *sql.Rows): the context is released by its own timer at the
// deadline, which the reading must not outlive anyway.
func (db *DB) boundRead(ctx context.Context) context.Context {
	ctx, cancel := db.bound(ctx)
	_ = cancel
	return ctx
}

// Exec runs a statement outside a transaction.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (_ sql.Result, err error) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(err) }()
	}
	ctx, cancel := db.bound(ctx)
	defer cancel()
	s, q := db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return s.ExecContext(ctx, args...)
	}
	return db.ExecContext(ctx, q, args...)
}

// Query runs a query outside a transaction.
func (db *DB) Query(ctx context.Context, query string, args ...any) (_ *sql.Rows, err error) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(err) }()
	}
	ctx = db.boundRead(ctx)
	s, q := db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return s.QueryContext(ctx, args...)
	}
	return db.QueryContext(ctx, q, args...)
}

// QueryRow runs a single-row query outside a transaction.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) (row *sql.Row) {
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(row.Err()) }()
	}
	return db.queryRow(ctx, query, args...)
}

// queryRow is QueryRow unobserved.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = db.boundRead(ctx)
	s, q := db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return s.QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, q, args...)
}

// Tx is a transaction that knows the time it began.
type Tx struct {
	tx *sql.Tx
	db *DB
	// deadline bounds the transaction's statements (see Options); the
	// contexts made for them are released when InTx returns.
	deadline time.Time
	releases []context.CancelFunc

	// Now is when the transaction began, in UTC, at microsecond precision
	// (what PostgreSQL keeps), so both engines store identical instants.
	Now time.Time

	afterCommit []func()

	// conn is the transaction's connection on PostgreSQL, for pipelines
	// (see Queue); nil on SQLite. pending are the writes Queue holds
	// until the transaction's next statement or its commit; failed is the
	// first failure of one of them, which the transaction returns.
	conn    *sql.Conn
	pending []pendingWrite
	failed  error
	// sent is whether the BEGIN has gone to the server (PostgreSQL).
	sent bool
}

// AfterCommit has f run once the transaction has committed, never when it
// rolls back: what tells of the work (a log line, a wake-up of a loop
// that reads what it wrote) happens only when the work happened.
func (tx *Tx) AfterCommit(f func()) { tx.afterCommit = append(tx.afterCommit, f) }

// InTx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise (or when fn panics). The whole transaction, its wait for
// SQLite's write slot included, is one call under the pool's deadline.
func (db *DB) InTx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	var committed *Tx
	defer func() {
		// Last of all, when SQLite's write slot is free again.
		if committed != nil {
			for _, f := range committed.afterCommit {
				f()
			}
		}
	}()
	if db.Observer != nil {
		var done func(error)
		ctx, done = db.observe(ctx)
		defer func() { done(err) }()
	}
	ctx, cancel := db.bound(ctx)
	defer cancel()
	if db.writer != nil {
		select {
		case db.writer <- struct{}{}:
			defer db.releaseWriter()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var conn *sql.Conn
	var sqlTx *sql.Tx
	if db.Engine == Postgres {
		// The transaction's own connection: its BEGIN is queued (see
		// Queue) and goes with the first statement, and its COMMIT with
		// the last writes, in their pipelines. Closed (returned to the
		// pool) after the transaction ends, the deferred calls running
		// last first; a connection left in a transaction is discarded
		// there (pgx's stdlib refuses it at reset).
		if conn, err = db.DB.Conn(ctx); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer conn.Close()
	} else if sqlTx, err = db.BeginTx(ctx, nil); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, db: db, conn: conn, Now: Timestamp(db.Now())}
	if conn != nil {
		tx.pending = []pendingWrite{{query: "BEGIN"}}
	}
	tx.deadline, _ = ctx.Deadline()
	defer func() {
		for _, release := range tx.releases {
			release()
		}
		if p := recover(); p != nil {
			tx.rollback(ctx)
			panic(p)
		}
		if err != nil {
			tx.rollback(ctx)
		}
	}()
	err = fn(tx)
	if err == nil && tx.failed == nil {
		err = tx.commit(ctx)
	}
	if tx.failed != nil {
		// A queued write failed: that is the transaction's failure,
		// whatever the statements after it reported.
		err = tx.failed
	}
	if err != nil {
		return err
	}
	committed = tx
	return nil
}

// DB returns the pool the transaction belongs to, for its dialect helpers.
func (tx *Tx) DB() *DB { return tx.db }

// bound returns ctx under the transaction's deadline: a statement's
// context is its caller's, which knows nothing of InTx's.
func (tx *Tx) bound(ctx context.Context) context.Context {
	if tx.deadline.IsZero() {
		return ctx
	}
	ctx, cancel := context.WithDeadline(ctx, tx.deadline)
	tx.releases = append(tx.releases, cancel)
	return ctx
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = tx.bound(ctx)
	if tx.conn != nil {
		// With the queued writes (the BEGIN at first), in their pipeline.
		return tx.pipeline(ctx, query, args)
	}
	s, q := tx.db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return tx.tx.StmtContext(ctx, s.Stmt).ExecContext(ctx, args...)
	}
	return tx.tx.ExecContext(ctx, q, args...)
}

// Query runs a query in the transaction.
func (tx *Tx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = tx.bound(ctx)
	if tx.conn != nil {
		if err := tx.flush(ctx); err != nil {
			return nil, err
		}
		return tx.conn.QueryContext(ctx, tx.db.Rebind(query), args...)
	}
	s, q := tx.db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return tx.tx.StmtContext(ctx, s.Stmt).QueryContext(ctx, args...)
	}
	return tx.tx.QueryContext(ctx, q, args...)
}

// QueryRow runs a single-row query in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = tx.bound(ctx)
	// A failed queued write is kept in tx.failed; the query then fails
	// too (the server's transaction is aborted) and InTx reports the
	// write's failure.
	if tx.conn != nil {
		_ = tx.flush(ctx)
		return tx.conn.QueryRowContext(ctx, tx.db.Rebind(query), args...)
	}
	s, q := tx.db.stmt(ctx, query)
	if s != nil {
		defer s.release()
		return tx.tx.StmtContext(ctx, s.Stmt).QueryRowContext(ctx, args...)
	}
	return tx.tx.QueryRowContext(ctx, q, args...)
}

// Timestamp normalises t to what both engines store: UTC, microseconds.
func Timestamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// IsUniqueViolation reports whether err is a unique or primary-key violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		c := sqErr.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// IsForeignKeyViolation reports whether err is a refused foreign-key change.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23503"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		// SQLite reports an ON DELETE RESTRICT refusal with the trigger
		// code; only the message tells it from a RAISE in a trigger.
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY ||
			(sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER && strings.Contains(sqErr.Error(), "FOREIGN KEY constraint failed"))
	}
	return false
}

// IsRaised reports whether err is a refusal raised by a trigger
// (RAISE EXCEPTION on PostgreSQL, RAISE(ABORT, …) on SQLite).
func IsRaised(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "P0001"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER && !IsForeignKeyViolation(err)
	}
	return false
}

// IsUnavailable reports whether err means the database could not be
// reached, went away (refused or reset connections, a server shutting
// down or starting up) or did not answer in time (a call's deadline, a
// statement timeout): a dependency outage to answer with 503, not a bug
// to answer with 500.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01–57P03: admin or crash
		// shutdown, cannot connect now.
		// 57014: query_canceled, which statement_timeout raises.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" || pgErr.Code == "57014"
	}
	var connectErr *pgconn.ConnectError
	var netErr *net.OpError
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		// The busy timeout ran out: the database is locked by a writer.
		// An interrupt is a call's deadline ending the statement.
		return sqErr.Code() == sqlite3.SQLITE_BUSY || sqErr.Code() == sqlite3.SQLITE_LOCKED || sqErr.Code() == sqlite3.SQLITE_INTERRUPT
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}
