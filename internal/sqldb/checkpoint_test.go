package sqldb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/platformco/platform/internal/testutil"
)

// walFrames reports the write-ahead log's length and how much of it is
// already in the database file, without checkpointing.
func walFrames(t *testing.T, db *DB) (log, checkpointed int) {
	t.Helper()
	var busy int
	if err := db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(NOOP)`).Scan(&busy, &log, &checkpointed); err != nil {
		t.Fatal(err)
	}
	return log, checkpointed
}

// TestCheckpointer: commits past SQLite's default checkpoint size (1,000
// pages) leave the log alone, and the DB's checkpointer, once running,
// copies all of it into the database file.
func TestCheckpointer(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.stopCheckpointer()
	db.ckpt = nil
	if _, err := db.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const commits = 1500 // each appends at least one page to the log
	for i := range commits {
		if _, err := db.Write(ctx, `INSERT INTO t (id, v) VALUES ($1, $2)`, i, "capability"); err != nil {
			t.Fatal(err)
		}
	}
	if log, done := walFrames(t, db); log < commits || done != 0 {
		t.Fatalf("after %d commits without the checkpointer: log %d frames, %d checkpointed; want at least %d, none checkpointed", commits, log, done, commits)
	}

	db.startCheckpointer()
	if _, err := db.Write(ctx, `INSERT INTO t (id, v) VALUES ($1, $2)`, commits, "capability"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the checkpointer to empty the log", func() bool {
		log, done := walFrames(t, db)
		return log > 0 && done == log
	})
	// Close stops the checkpointer; the deferred Close is a second call.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
