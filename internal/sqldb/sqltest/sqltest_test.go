package sqltest

import (
	"context"
	"os"
	"testing"
	"testing/fstest"

	"github.com/platformco/platform/internal/sqldb"
)

func migrations(table string) sqldb.Migrations {
	sql := "-- +goose Up\nCREATE TABLE " + table + " (id INTEGER PRIMARY KEY, v TEXT NOT NULL);\n"
	return fstest.MapFS{
		"postgres/00001_init.sql": {Data: []byte(sql)},
		"sqlite/00001_init.sql":   {Data: []byte(sql)},
	}
}

// TestOpenGivesEachTestItsOwnMigratedDatabase: two databases from one
// schema both hold it, and a row in one is not in the other (on
// PostgreSQL both are clones of one template).
func TestOpenGivesEachTestItsOwnMigratedDatabase(t *testing.T) {
	Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		m := migrations("cloned")
		a, b := Open(t, engine, m), Open(t, engine, m)
		if _, err := a.Exec(ctx, `INSERT INTO cloned (id, v) VALUES (1, 'a')`); err != nil {
			t.Fatalf("insert into the first database: %v", err)
		}
		var n int
		if err := b.QueryRowContext(ctx, `SELECT count(*) FROM cloned`).Scan(&n); err != nil {
			t.Fatalf("the second database lacks the schema: %v", err)
		}
		if n != 0 {
			t.Errorf("rows in the second database = %d, want 0", n)
		}
	})
}

func TestTemplateNamedByTheMigrations(t *testing.T) {
	same1, err := hashMigrations(migrations("t1"))
	if err != nil {
		t.Fatal(err)
	}
	same2, _ := hashMigrations(migrations("t1"))
	other, _ := hashMigrations(migrations("t2"))
	if same1 != same2 {
		t.Errorf("equal migrations hash to %s and %s", same1, same2)
	}
	if same1 == other {
		t.Errorf("different migrations share the hash %s", same1)
	}
	if os.Getenv("TEST_DATABASE_URL") == "" {
		return
	}
	name := template(t, migrations("t1"))
	if want := "tpl_" + same1[:16]; name != want {
		t.Errorf("template = %s, want %s", name, want)
	}
	ok, err := databaseExists(adminURL(t), name)
	if err != nil || !ok {
		t.Errorf("template %s exists = %v, %v; want true", name, ok, err)
	}
}
