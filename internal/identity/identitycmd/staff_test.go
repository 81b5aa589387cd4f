package identitycmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestStaffCommandAudits: `identity staff add|remove` records who ran it
// in the audit trail and announces the change, once per change.
func TestStaffCommandAudits(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		url := sqltest.URL(t, engine)
		db, err := sqldb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Migrate(ctx, sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		u, _, err := sqlstore.New(db).CreateUser(ctx, identity.NewUser{Email: "ada@example.com", PasswordHash: "x", PersonalSlug: "ada-12345678"})
		if err != nil {
			t.Fatal(err)
		}
		vars := map[string]string{"DATABASE_URL": url, "USER": "alice"}
		run := func(args ...string) {
			t.Helper()
			var out, errOut bytes.Buffer
			if err := Command.Run(ctx, args, cli.Env{Getenv: func(k string) string { return vars[k] }, Stdout: &out, Stderr: &errOut}); err != nil {
				t.Fatalf("%v: %v (%s)", args, err, errOut.String())
			}
		}
		run("staff", "add", "ADA@example.com")
		run("staff", "add", "ada@example.com")
		vars["USER"] = ""
		run("staff", "remove", "ada@example.com")

		rows, err := db.Query(ctx, `SELECT user_id, action, actor FROM staff_audit ORDER BY created_at, action DESC`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id, action, actor string
			if err := rows.Scan(&id, &action, &actor); err != nil {
				t.Fatal(err)
			}
			got = append(got, id+" "+action+" "+actor)
		}
		if want := []string{u.ID + " enabled cli:alice", u.ID + " disabled cli"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("staff_audit = %v, want %v", got, want)
		}
		var types []string
		trows, err := db.Query(ctx, `SELECT type FROM outbox WHERE subject = $1 AND type LIKE 'identity.staff.%' ORDER BY seq`, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer trows.Close()
		for trows.Next() {
			var typ string
			if err := trows.Scan(&typ); err != nil {
				t.Fatal(err)
			}
			types = append(types, typ)
		}
		if want := identity.EventStaffEnabled + "," + identity.EventStaffDisabled; strings.Join(types, ",") != want {
			t.Errorf("outbox = %v, want %s", types, want)
		}
	})
}
