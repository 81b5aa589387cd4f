package sqlstore_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestStaffReadsAnyAccount: staff read an account they are no member of,
// and its members page by page; customers, even its owner, are refused;
// an unknown or malformed id is the one not-found answer.
func TestStaffReadsAnyAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		start := env.Clock.Now()
		env.Clock.Advance(time.Minute)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		staff := env.User(t, "staff@example.com")
		if err := env.Service.SetStaff(ctx, "staff@example.com", true, "test"); err != nil {
			t.Fatal(err)
		}
		staff = env.For(t, staff, "")

		got, err := env.Service.StaffAccount(ctx, staff, owner.Account.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := identity.Account{ID: owner.Account.ID, Name: "Acme Corp", Slug: "acme-corp", CreatedAt: start, UpdatedAt: start}
		if got != want {
			t.Errorf("StaffAccount = %+v, want %+v (no role: staff holds none)", got, want)
		}
		personal, err := env.Service.StaffAccount(ctx, staff, personalOf(t, env, member))
		if err != nil || !personal.Personal {
			t.Errorf("StaffAccount of a personal account = %+v, %v; want it, personal", personal, err)
		}

		// Paging as the members' own list: one by one, in join order.
		var emails []string
		page := identity.PageRequest{Limit: 1}
		for range 5 {
			ms, next, err := env.Service.StaffMembers(ctx, staff, owner.Account.ID, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.AccountID != owner.Account.ID {
					t.Errorf("member %+v is of another account", m)
				}
				emails = append(emails, m.Email+":"+string(m.Role))
			}
			if next == nil {
				break
			}
			page.After = next
		}
		if got, want := emails, []string{"owner@example.com:owner", "member@example.com:member"}; !slices.Equal(got, want) {
			t.Errorf("StaffMembers = %v, want %v", got, want)
		}

		tests := []struct {
			name    string
			who     identity.Principal
			account string
			want    error
		}{
			{"ErrNotStaffOwner", owner, owner.Account.ID, identity.ErrNotStaff},
			{"ErrNotStaffMember", member, owner.Account.ID, identity.ErrNotStaff},
			{"ErrNotStaffBeforeTheID", member, "not-a-uuid", identity.ErrNotStaff},
			{"ErrAccountNotFoundUnknown", staff, "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", identity.ErrAccountNotFound},
			{"ErrAccountNotFoundMalformed", staff, "not-a-uuid", identity.ErrAccountNotFound},
			{"ErrAccountNotFoundEmpty", staff, "", identity.ErrAccountNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if _, err := env.Service.StaffAccount(ctx, tt.who, tt.account); !errors.Is(err, tt.want) {
					t.Errorf("StaffAccount: %v, want %v", err, tt.want)
				}
				if _, _, err := env.Service.StaffMembers(ctx, tt.who, tt.account, allPage); !errors.Is(err, tt.want) {
					t.Errorf("StaffMembers: %v, want %v", err, tt.want)
				}
			})
		}

		// A deleted account is gone for staff too.
		if err := env.Service.DeleteAccount(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.StaffAccount(ctx, staff, owner.Account.ID); !errors.Is(err, identity.ErrAccountNotFound) {
			t.Errorf("StaffAccount of a deleted account: %v, want ErrAccountNotFound", err)
		}
	})
}

// personalOf returns the id of p's personal account.
func personalOf(t *testing.T, env *identitytest.Env, p identity.Principal) string {
	t.Helper()
	accounts, _, err := env.Service.ListAccounts(ctx, p, allPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		if a.Personal {
			return a.ID
		}
	}
	t.Fatal("no personal account")
	return ""
}
