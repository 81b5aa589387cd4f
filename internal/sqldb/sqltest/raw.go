package sqltest

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
)

// RawSQLite opens db's SQLite file the way the sqlite3 shell does: foreign
// keys off, nothing of sqldb's configuration but a busy timeout. Tests use
// it to show that an invariant holds for every connection, not only for
// the ones sqldb configures.
func RawSQLite(t testing.TB, db *sqldb.DB) *sql.DB {
	t.Helper()
	var path string
	if err := db.QueryRow(context.Background(), `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"_pragma": {"busy_timeout(10000)"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	var fk int
	if err := raw.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("raw connection: foreign_keys = %d, %v; want 0", fk, err)
	}
	return raw
}

// WantNoDanglingReferences fails t when any row of raw's database names a
// parent row that is gone (PRAGMA foreign_key_check).
func WantNoDanglingReferences(t testing.TB, raw *sql.DB) {
	t.Helper()
	rows, err := raw.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, parent string
		var rowid, fkid sql.NullInt64
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s row %v names a missing %s row", table, rowid.Int64, parent)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
