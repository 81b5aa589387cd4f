package sqltest

import (
	"slices"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
)

// TestRunReportsPostgresSkipped: without TEST_DATABASE_URL the PostgreSQL
// subtest still exists and is reported as skipped, not silently absent.
func TestRunReportsPostgresSkipped(t *testing.T) {
	t.Setenv("TEST_DATABASE_URL", "")
	var ran []sqldb.Engine
	subtests := map[string]*testing.T{}
	t.Run("inner", func(t *testing.T) {
		Run(t, func(t *testing.T, e sqldb.Engine) { ran = append(ran, e) })
		// Run's subtests have finished; look them up through a second
		// pass that records each one's *testing.T.
		for _, e := range []sqldb.Engine{sqldb.SQLite, sqldb.Postgres} {
			t.Run(string(e)+"-probe", func(t *testing.T) {
				subtests[string(e)] = t
				skipWithout(t, e)
			})
		}
	})
	if want := []sqldb.Engine{sqldb.SQLite}; !slices.Equal(ran, want) {
		t.Errorf("ran on %v, want %v", ran, want)
	}
	if !subtests["postgres"].Skipped() {
		t.Error("the PostgreSQL subtest was not reported as skipped")
	}
	if subtests["sqlite"].Skipped() {
		t.Error("the SQLite subtest was skipped")
	}
}
