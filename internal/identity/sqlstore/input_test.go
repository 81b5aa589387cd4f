package sqlstore_test

import (
	"errors"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestControlCharacters: a NUL (which PostgreSQL cannot store in text) or
// another control character in any text input is a field error or a plain
// refusal on both engines, never an internal failure, and writes nothing.
func TestControlCharacters(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		staff := env.User(t, "staff@example.com")
		if err := env.Service.SetStaff(ctx, "staff@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		staff = env.For(t, staff, "")

		writesNothing(t, env, func() {
			for _, bad := range []string{"Ada\x00Lovelace", "Ada\nLovelace", "Ada\u0085Lovelace", "Ada\x7fLovelace"} {
				_, err := env.Service.Register(ctx, identity.RegisterInput{Email: "ada@example.com", Password: "12345678", DisplayName: bad})
				wantFields(t, err, field("display_name", "invalid"))
				_, err = env.Service.CreateAccount(ctx, owner, "Team "+bad)
				wantFields(t, err, field("name", "invalid"))
				_, err = env.Service.RenameAccount(ctx, owner, bad)
				wantFields(t, err, field("name", "invalid"))
				_, err = env.Service.SearchUsers(ctx, staff, bad, 0)
				wantFields(t, err, field("query", "invalid"))
			}
			for _, email := range []string{"a\x00@example.com", "owner@example.com\x00", "\x00"} {
				_, err := env.Service.Register(ctx, identity.RegisterInput{Email: email, Password: "12345678"})
				wantFields(t, err, field("email", "invalid"))
				if _, _, err := env.Service.Login(ctx, email, identitytest.Password); !errors.Is(err, identity.ErrUnauthorized) {
					t.Errorf("Login(%q): %v, want ErrUnauthorized", email, err)
				}
				_, err = env.Service.Invite(ctx, owner, email, identity.RoleMember)
				wantFields(t, err, field("email", "invalid"))
			}
			if _, err := env.Service.AcceptInvitation(ctx, staff, "tok\x00en"); !errors.Is(err, identity.ErrInvitationUnknown) {
				t.Errorf("accept a token with NUL: %v, want ErrInvitationUnknown", err)
			}
		})
		// A tab inside a name is a control character too, but surrounding
		// white space is trimmed first.
		if _, err := env.Service.CreateAccount(ctx, owner, "\tTabbed Team\t"); err != nil {
			t.Errorf("a name surrounded by tabs: %v", err)
		}
	})
}
