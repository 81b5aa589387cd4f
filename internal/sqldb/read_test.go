package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// readRows fills t with ids 1..n.
func readRows(t *testing.T, db *sqldb.DB, n int) {
	t.Helper()
	for id := 1; id <= n; id++ {
		if _, err := db.Exec(context.Background(), `INSERT INTO t (id) VALUES ($1)`, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadRowRace: 300 goroutines read at once, so on PostgreSQL they
// share pipelines. Among them, reads of a missing row, reads the server
// fails (abs of the smallest bigint overflows on both engines), reads
// whose statement does not parse, and reads scanned into the wrong type.
// Each caller gets its own outcome: its own row, sql.ErrNoRows, its own
// failure, never another's. On PostgreSQL the reads shared pipelines and
// reads were run again alone after a failure in theirs; on SQLite each
// was a plain query and no pipeline was sent.
func TestReadRowRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		const rows, n = 50, 300
		readRows(t, db, rows)
		type outcome int
		const (
			found outcome = iota
			missing
			overflow
			unparsed
			mistyped
		)
		kind := func(i int) outcome {
			switch i % 10 {
			case 3:
				return missing
			case 5:
				return overflow
			case 7:
				return mistyped
			case 9:
				if i%20 == 9 {
					return unparsed
				}
			}
			return found
		}
		got := make([]int64, n)
		errs := atOnce(n, func(i int) error {
			id, operand, query := i%rows+1, int64(0), `SELECT id * 10 + abs(CAST($2 AS BIGINT)) FROM t WHERE id = $1`
			switch kind(i) {
			case missing:
				id = rows + 1 + i
			case overflow:
				operand = math.MinInt64
			case unparsed:
				query = `SELECT id * 10 + abs(CAST($2 AS BIGINT)) FROM t WHERE id = $1 AND AND`
			case mistyped:
				var when time.Time
				return db.ReadRow(ctx, query, id, operand).Scan(&when)
			}
			return db.ReadRow(ctx, query, id, operand).Scan(&got[i])
		})
		for i, err := range errs {
			switch kind(i) {
			case missing:
				if !errors.Is(err, sql.ErrNoRows) {
					t.Errorf("read %d (no such row) = %v, want sql.ErrNoRows", i, err)
				}
			case overflow:
				if err == nil || errors.Is(err, sql.ErrNoRows) || !contains(err, "out of range", "overflow") {
					t.Errorf("read %d (overflow) = %v, want the server's overflow", i, err)
				}
			case unparsed:
				if err == nil || !contains(err, "syntax error", "near \"AND\"") {
					t.Errorf("read %d (does not parse) = %v, want a syntax error", i, err)
				}
			case mistyped:
				if err == nil || errors.Is(err, sql.ErrNoRows) || contains(err, "out of range", "overflow", "syntax") {
					t.Errorf("read %d (scanned into a time) = %v, want its scan's error", i, err)
				}
			default:
				if want := int64(i%rows+1) * 10; err != nil || got[i] != want {
					t.Errorf("read %d = %d, %v; want %d", i, got[i], err, want)
				}
			}
		}
		st := db.ReadStats()
		if engine == sqldb.SQLite {
			if st != (sqldb.ReadStats{}) {
				t.Errorf("SQLite sent pipelines: %+v, want plain queries", st)
			}
			return
		}
		if st.Reads < n || st.Pipelines >= st.Reads {
			t.Errorf("read stats %+v: want %d reads sharing fewer pipelines", st, n)
		}
		if st.Again == 0 {
			t.Errorf("read stats %+v: no read ran again alone, so no failure happened in a shared pipeline", st)
		}
	})
}

// contains reports whether err's message contains any of subs.
func contains(err error, subs ...string) bool {
	return err != nil && slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(err.Error(), s) })
}

// blocker holds PostgreSQL advisory locks on a connection of its own, so
// that a read of blockedRead(key) waits until the test lets it go.
type blocker struct {
	t    *testing.T
	conn *sql.Conn
}

func newBlocker(t *testing.T, db *sqldb.DB) *blocker {
	t.Helper()
	conn, err := db.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &blocker{t: t, conn: conn}
}

func (b *blocker) hold(key int) {
	b.t.Helper()
	if _, err := b.conn.ExecContext(context.Background(), `SELECT pg_advisory_lock($1)`, key); err != nil {
		b.t.Fatal(err)
	}
}

func (b *blocker) release(key int) {
	b.t.Helper()
	if _, err := b.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, key); err != nil {
		b.t.Fatal(err)
	}
}

// blockedRead returns an empty text once the advisory lock $1 is free;
// the lock it takes is its transaction's and ends with it.
const blockedRead = `SELECT CAST(pg_advisory_xact_lock_shared($1) AS text)`

// readOutcome is a read's outcome, from readAsync.
type readOutcome struct {
	v   int64
	err error
}

// readAsync reads one bigint with ReadRow on a goroutine of its own.
func readAsync(ctx context.Context, db *sqldb.DB, query string, args ...any) <-chan readOutcome {
	out := make(chan readOutcome, 1)
	go func() {
		var v int64
		err := db.ReadRow(ctx, query, args...).Scan(&v)
		out <- readOutcome{v, err}
	}()
	return out
}

func postgresOnly(t *testing.T, engine sqldb.Engine) {
	t.Helper()
	if engine != sqldb.Postgres {
		t.Skip("SQLite has no pipelines: ReadRow is QueryRow (TestReadRowRace)")
	}
}

// TestReadRowPipelineBound: with one pipeline allowed at a time and it
// held up on the server, 100 reads queue; once it is let go they go in
// pipelines of at most MaxPipeline reads, the first of them full, and
// each caller gets its own row.
func TestReadRowPipelineBound(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		postgresOnly(t, engine)
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		db.ReadPipelinesAtOnce(1)
		const n = 100
		readRows(t, db, n)
		b := newBlocker(t, db)
		b.hold(1)
		first := make(chan error, 1)
		go func() {
			var s string
			first <- db.ReadRow(ctx, blockedRead, 1).Scan(&s)
		}()
		waitFor(t, func() bool { return db.ReadStats().Pipelines == 1 }, "the first read to be sent")
		outs := make([]<-chan readOutcome, n)
		for i := range n {
			outs[i] = readAsync(ctx, db, `SELECT id * 10 FROM t WHERE id = $1`, i+1)
		}
		waitFor(t, func() bool { return db.ReadsQueued() == n }, "the reads to queue behind it")
		b.release(1)
		if err := <-first; err != nil {
			t.Fatalf("the held read: %v", err)
		}
		for i, out := range outs {
			if o := <-out; o.err != nil || o.v != int64(i+1)*10 {
				t.Errorf("read %d = %d, %v; want %d", i, o.v, o.err, (i+1)*10)
			}
		}
		st := db.ReadStats()
		if st.Largest != sqldb.MaxPipeline {
			t.Errorf("largest pipeline = %d reads, want the bound %d", st.Largest, sqldb.MaxPipeline)
		}
		if min := 1 + (n+sqldb.MaxPipeline-1)/sqldb.MaxPipeline; st.Pipelines < int64(min) {
			t.Errorf("pipelines = %d, want at least %d for %d reads", st.Pipelines, min, n+1)
		}
	})
}

// TestReadRowCancelled: a caller whose context has ended before it reads
// gets the context's error on both engines, and nothing is sent.
func TestReadRowCancelled(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, testSchema)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var one int
		if err := db.ReadRow(ctx, `SELECT 1`).Scan(&one); !errors.Is(err, context.Canceled) {
			t.Fatalf("ReadRow with a cancelled context = %v, want context.Canceled", err)
		}
		if st := db.ReadStats(); st.Pipelines != 0 {
			t.Fatalf("read stats %+v after a cancelled read, want nothing sent", st)
		}
	})
}

// TestReadRowCancelledCallerBlocksNoOne: one pipeline at a time. A caller
// that gives up while its read waits for a pipeline gets its context's
// error at once, and the reads queued with it are served; a caller that
// gives up while its read is on the server, in a pipeline with others,
// gets its error at once too, and the pipeline goes on for the others.
func TestReadRowCancelledCallerBlocksNoOne(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		postgresOnly(t, engine)
		ctx := context.Background()
		db := sqltest.Open(t, engine, testSchema)
		db.ReadPipelinesAtOnce(1)
		readRows(t, db, 3)
		b := newBlocker(t, db)
		b.hold(1)
		b.hold(2)
		var s string
		first := make(chan error, 1)
		go func() { first <- db.ReadRow(ctx, blockedRead, 1).Scan(&s) }()
		waitFor(t, func() bool { return db.ReadStats().Pipelines == 1 }, "the first read to be sent")

		// Queued, then given up: the caller learns at once.
		queuedCtx, cancelQueued := context.WithCancel(ctx)
		queued := readAsync(queuedCtx, db, `SELECT id FROM t WHERE id = $1`, 1)
		waitFor(t, func() bool { return db.ReadsQueued() == 1 }, "the read to queue")
		cancelQueued()
		if o := <-queued; !errors.Is(o.err, context.Canceled) {
			t.Fatalf("a read given up while queued = %d, %v; want context.Canceled", o.v, o.err)
		}

		// Taken into the next pipeline ahead of two others, held on the
		// server, then given up.
		heldCtx, cancelHeld := context.WithCancel(ctx)
		held := make(chan error, 1)
		go func() {
			var s string
			held <- db.ReadRow(heldCtx, blockedRead, 2).Scan(&s)
		}()
		waitFor(t, func() bool { return db.ReadsQueued() >= 2 }, "the held read to queue")
		behind := []<-chan readOutcome{
			readAsync(ctx, db, `SELECT id FROM t WHERE id = $1`, 2),
			readAsync(ctx, db, `SELECT id FROM t WHERE id = $1`, 3),
		}
		waitFor(t, func() bool { return db.ReadsQueued() >= 4 }, "the reads behind it to queue")
		b.release(1)
		if err := <-first; err != nil {
			t.Fatalf("the first read: %v", err)
		}
		waitFor(t, func() bool { return db.ReadStats().Pipelines == 2 }, "the second pipeline to be sent")
		cancelHeld()
		if err := <-held; !errors.Is(err, context.Canceled) {
			t.Fatalf("a read given up on the server = %v, want context.Canceled", err)
		}
		b.release(2)
		for i, out := range behind {
			if o := <-out; o.err != nil || o.v != int64(i+2) {
				t.Errorf("read behind the given-up one = %d, %v; want %d", o.v, o.err, i+2)
			}
		}
		if st := db.ReadStats(); st.Largest != 3 || st.Again != 0 {
			t.Errorf("read stats %+v: want the given-up read and the two behind it in one pipeline, none run again", st)
		}
	})
}

// TestReadRowAllGiveUp: reads whose every caller has given up are stopped
// on the server, alone or sharing a pipeline: eight callers at once read
// pg_sleep(60) with contexts that end after 200 ms; each gets its error,
// no pg_sleep is left running, and the pool serves reads after.
func TestReadRowAllGiveUp(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		postgresOnly(t, engine)
		db := sqltest.Open(t, engine, testSchema)
		errs := atOnce(8, func(int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			var slept string
			return db.ReadRow(ctx, `SELECT pg_sleep(60)::text`).Scan(&slept)
		})
		for i, err := range errs {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("read %d = %v, want context.DeadlineExceeded", i, err)
			}
		}
		waitFor(t, func() bool {
			var n int
			err := db.QueryRow(context.Background(), `
				SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'active' AND query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()`).Scan(&n)
			return err == nil && n == 0
		}, "the abandoned reads to stop on the server")
		// Every connection that ran one is free again (or gone): reads
		// on all of them at once go through.
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var got string
				if err := db.ReadRow(ctx, `SELECT $1::text`, strconv.Itoa(i)).Scan(&got); err != nil || got != strconv.Itoa(i) {
					t.Errorf("read after the stopped ones = %q, %v", got, err)
				}
			}()
		}
		wg.Wait()
	})
}
