package sqlstore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestRaceReadPath: the read path's point reads (a session check alone
// and for an account, an API key) run 200 at once, mixed with checks that
// must fail (an ended session, a non-member, a revoked key). Each caller
// gets its own principal or its own refusal. On PostgreSQL the reads
// shared pipelines (sqldb.ReadRow); on SQLite nothing was coalesced.
func TestRaceReadPath(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.User(t, "ada@example.com")
		team := env.Team(t, owner, "Acme")
		ownerTok := env.Login(t, "ada@example.com")
		outsider := env.User(t, "bob@example.com")
		outsiderTok := env.Login(t, "bob@example.com")
		ended := env.Login(t, "bob@example.com")
		if err := env.Service.Logout(ctx, env.Principal(t, ended, "")); err != nil {
			t.Fatal(err)
		}
		key, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "ci", Scopes: []string{"account:read"}})
		if err != nil {
			t.Fatal(err)
		}
		revoked, err := env.Service.CreateAPIKey(ctx, team, identity.CreateAPIKeyInput{Name: "old", Scopes: []string{"account:read"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Service.RevokeAPIKey(ctx, team, revoked.ID); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name, token, account string
			// wantUser and wantRole are the principal's, empty for a key's
			// user or no account; wantErr is the refusal.
			wantUser, wantRole string
			wantKey            bool
			wantErr            error
		}{
			{"Session", ownerTok, "", owner.User.ID, "", false, nil},
			{"SessionForAccount", ownerTok, team.Account.ID, owner.User.ID, string(identity.RoleOwner), false, nil},
			{"OtherSession", outsiderTok, "", outsider.User.ID, "", false, nil},
			{"NotAMember", outsiderTok, team.Account.ID, outsider.User.ID, "", false, nil},
			{"EndedSession", ended, "", "", "", false, identity.ErrUnauthorized},
			{"APIKey", key.Token, team.Account.ID, "", string(identity.RoleAPIKey), true, nil},
			{"RevokedAPIKey", revoked.Token, team.Account.ID, "", "", false, identity.ErrUnauthorized},
		}
		before := env.DB.ReadStats()
		const n = 200
		_, unexpected := race(n, func(i int) error {
			c := cases[i%len(cases)]
			p, err := env.Service.Authenticate(ctx, c.token, c.account)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					return fmt.Errorf("%s: %v, want %v", c.name, err, c.wantErr)
				}
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			role := ""
			if p.Account != nil {
				role = string(p.Account.Role)
			}
			if p.User.ID != c.wantUser || role != c.wantRole || (p.APIKey != nil) != c.wantKey {
				return fmt.Errorf("%s: user %q role %q key %v; want %q, %q, %v", c.name, p.User.ID, role, p.APIKey != nil, c.wantUser, c.wantRole, c.wantKey)
			}
			return nil
		})
		wantNoUnexpected(t, unexpected)
		st := env.DB.ReadStats()
		pipelines, reads := st.Pipelines-before.Pipelines, st.Reads-before.Reads
		if engine == sqldb.SQLite {
			if st != (sqldb.ReadStats{}) {
				t.Errorf("SQLite coalesced reads: %+v", st)
			}
			return
		}
		if reads < n || pipelines >= reads {
			t.Errorf("%d reads in %d pipelines: want the %d checks' reads to share pipelines", reads, pipelines, n)
		}
	})
}
