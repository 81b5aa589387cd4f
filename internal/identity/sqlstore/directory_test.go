package sqlstore_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func emails(rs []identity.StaffRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Email)
	}
	return out
}

func TestStaffDirectory(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		users := []struct{ email, display string }{
			{"zed@x.io", "Alpha Person"},
			{"a_b@x.io", ""},
			{"axb@x.io", ""},
			{"a%b@x.io", ""},
			{"ab@x.io", ""},
			{"back@x.io", `back\slash`},
			{"backx@x.io", "backxslash"},
			{"carol@y.io", "Carol Ünal"},
			{"Jürgen@y.io", ""},
		}
		for _, u := range users {
			if _, err := env.Service.Register(ctx, identity.RegisterInput{Email: u.email, Password: identitytest.Password, DisplayName: u.display}); err != nil {
				t.Fatal(err)
			}
		}
		staff := env.User(t, "staff@z.io")
		if err := env.Service.SetStaff(ctx, " STAFF@z.io ", true, "test"); err != nil {
			t.Fatal(err)
		}
		staff = env.For(t, staff, "")
		if !staff.User.Staff {
			t.Fatal("SetStaff did not make the user staff")
		}
		if err := env.Service.SetStaff(ctx, "nobody@z.io", true, "test"); !errorsIs(err, identity.ErrUserNotFound) {
			t.Errorf("SetStaff of an unknown address: %v, want ErrUserNotFound", err)
		}

		tests := []struct {
			query string
			limit int
			want  []string
		}{
			{"a_b", 0, []string{"a_b@x.io"}},
			{"  a_b\t", 0, []string{"a_b@x.io"}},
			{"a%", 0, []string{"a%b@x.io"}},
			{"%b", 0, []string{"a%b@x.io"}},
			{`k\s`, 0, []string{"back@x.io"}},
			{"ALPHA", 0, []string{"zed@x.io"}},
			{"person", 0, []string{"zed@x.io"}},
			{"A_B@X.IO", 0, []string{"a_b@x.io"}},
			{"@x.io", 0, []string{"a%b@x.io", "a_b@x.io", "ab@x.io", "axb@x.io", "back@x.io", "backx@x.io", "zed@x.io"}},
			{"@x.io", 3, []string{"a%b@x.io", "a_b@x.io", "ab@x.io"}},
			{"Ünal", 0, []string{"carol@y.io"}},
			{"CAROL Ünal", 0, []string{"carol@y.io"}},
			{"JÜRGEN", 0, []string{"jürgen@y.io"}},
			{"nomatch", 0, []string{}},
			{"__", 0, []string{}},
			{"%%", 0, []string{}},
		}
		for _, tt := range tests {
			got, err := env.Service.SearchUsers(ctx, staff, tt.query, tt.limit)
			if err != nil {
				t.Errorf("SearchUsers(%q): %v", tt.query, err)
				continue
			}
			if g := emails(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("SearchUsers(%q, %d) = %v, want %v", tt.query, tt.limit, g, tt.want)
			}
		}

		// The record carries what the directory shows, nothing else.
		if _, err := env.DB.Exec(ctx, `UPDATE users SET disabled_at = $1 WHERE email = 'zed@x.io'`, env.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		got, err := env.Service.SearchUsers(ctx, staff, "zed@", 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("SearchUsers(zed@) = %v, %v", got, err)
		}
		r := got[0]
		if len(r.ID) != 36 || r.DisplayName != "Alpha Person" || r.DisabledAt == nil || !r.DisabledAt.Equal(env.Clock.Now()) || r.VerifiedAt != nil || !r.CreatedAt.Equal(env.Clock.Now()) {
			t.Errorf("record = %+v", r)
		}
		var fields []string
		for i := 0; i < reflect.TypeOf(r).NumField(); i++ {
			fields = append(fields, reflect.TypeOf(r).Field(i).Name)
		}
		if want := []string{"ID", "Email", "DisplayName", "DisabledAt", "VerifiedAt", "CreatedAt"}; !reflect.DeepEqual(fields, want) {
			t.Errorf("StaffRecord fields = %v, want %v", fields, want)
		}
	})
}

func TestStaffDirectoryLimitsAndRefusals(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		for i := 0; i < 55; i++ {
			env.Register(t, fmt.Sprintf("u%02d@d.io", 54-i))
		}
		plain := env.User(t, "plain@z.io")
		staff := env.User(t, "staff@z.io")
		if err := env.Service.SetStaff(ctx, "staff@z.io", true, "test"); err != nil {
			t.Fatal(err)
		}
		staff = env.For(t, staff, "")

		got, err := env.Service.SearchUsers(ctx, staff, "@d.io", 0)
		if err != nil || len(got) != identity.SearchDefaultLimit {
			t.Fatalf("default limit: %d records, %v; want 25", len(got), err)
		}
		if !sort.StringsAreSorted(emails(got)) || got[0].Email != "u00@d.io" {
			t.Errorf("not ordered by email: %v", emails(got))
		}
		if got, err := env.Service.SearchUsers(ctx, staff, "@d.io", 50); err != nil || len(got) != 50 {
			t.Errorf("limit 50: %d records, %v", len(got), err)
		}

		_, err = env.Service.SearchUsers(ctx, plain, "@d.io", 0)
		wantCode(t, err, identity.CodeForbidden)

		refusals := []struct {
			query string
			limit int
			want  []string // field:code
		}{
			{"", 0, []string{"query:too_short"}},
			{"a", 0, []string{"query:too_short"}},
			{"  a  ", 0, []string{"query:too_short"}},
			{"ü", 0, []string{"query:too_short"}},
			{"ab", 51, []string{"limit:too_large"}},
			{"ab", -1, []string{"limit:invalid"}},
			{" ", 500, []string{"query:too_short", "limit:too_large"}},
		}
		for _, tt := range refusals {
			_, err := env.Service.SearchUsers(ctx, staff, tt.query, tt.limit)
			wantCode(t, err, identity.CodeValidation)
			var want []string
			if e, ok := errsAs(err); ok {
				for _, f := range e.Fields {
					want = append(want, f.Field+":"+f.Code)
				}
			}
			if strings.Join(want, ",") != strings.Join(tt.want, ",") {
				t.Errorf("SearchUsers(%q, %d) fields = %v, want %v", tt.query, tt.limit, want, tt.want)
			}
		}
	})
}
