package sqlstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestListMembers(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		start := env.Clock.Now()
		env.Clock.Advance(time.Minute)
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		env.Clock.Advance(time.Minute)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)

		got, _, err := env.Service.ListMembers(ctx, member, allPage)
		if err != nil {
			t.Fatal(err)
		}
		want := []identity.Membership{
			{AccountID: owner.Account.ID, UserID: owner.User.ID, Email: "owner@example.com", Role: identity.RoleOwner, CreatedAt: start},
			{AccountID: owner.Account.ID, UserID: admin.User.ID, Email: "admin@example.com", Role: identity.RoleAdmin, CreatedAt: start.Add(time.Minute)},
			{AccountID: owner.Account.ID, UserID: member.User.ID, Email: "member@example.com", Role: identity.RoleMember, CreatedAt: start.Add(2 * time.Minute)},
		}
		if len(got) != len(want) {
			t.Fatalf("members = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("member %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		outsider := env.For(t, env.User(t, "out@example.com"), owner.Account.ID)
		if _, _, err := env.Service.ListMembers(ctx, outsider, allPage); !errors.Is(err, identity.ErrAccountNotFound) {
			t.Errorf("outsider list: %v, want ErrAccountNotFound", err)
		}
	})
}

func TestChangeRole(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)

		m, err := env.Service.ChangeRole(ctx, owner, member.User.ID, identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		if m.AccountID != owner.Account.ID || m.UserID != member.User.ID || m.Email != "member@example.com" || m.Role != identity.RoleAdmin || m.CreatedAt.IsZero() {
			t.Errorf("membership = %+v", m)
		}
		r := lastEvent(t, env, identity.EventMemberRoleChanged, owner.Account.ID)
		wantData(t, r, map[string]any{"account_id": owner.Account.ID, "user_id": member.User.ID, "old_role": "member", "new_role": "admin", "changed_by": owner.User.ID})
		wantUnpublished(t, r, env.Clock.Now())

		// Setting the role a member already has changes nothing.
		writesNothing(t, env, func() {
			if m, err := env.Service.ChangeRole(ctx, owner, member.User.ID, identity.RoleAdmin); err != nil || m.Role != identity.RoleAdmin {
				t.Errorf("same role: %+v, %v", m, err)
			}
		})

		outsider := env.User(t, "out@example.com")
		writesNothing(t, env, func() {
			// The last owner is never demoted.
			for _, role := range []identity.Role{identity.RoleAdmin, identity.RoleMember} {
				_, err := env.Service.ChangeRole(ctx, owner, owner.User.ID, role)
				wantCode(t, err, identity.CodeValidation)
				wantFields(t, err, field("role", "last_owner"))
			}
			_, err := env.Service.ChangeRole(ctx, admin, member.User.ID, identity.RoleMember)
			wantCode(t, err, identity.CodeForbidden)
			_, err = env.Service.ChangeRole(ctx, owner, member.User.ID, "superuser")
			wantFields(t, err, field("role", "invalid"))
			_, err = env.Service.ChangeRole(ctx, owner, member.User.ID, "")
			wantFields(t, err, field("role", "invalid"))
			for _, id := range []string{outsider.User.ID, "not-a-uuid", "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", strings.ToUpper(member.User.ID)} {
				if _, err := env.Service.ChangeRole(ctx, owner, id, identity.RoleAdmin); !errors.Is(err, identity.ErrMemberNotFound) {
					t.Errorf("ChangeRole(%s): %v, want ErrMemberNotFound", id, err)
				}
			}
		})

		// With two owners, either may step down.
		if _, err := env.Service.ChangeRole(ctx, owner, admin.User.ID, identity.RoleOwner); err != nil {
			t.Fatal(err)
		}
		m, err = env.Service.ChangeRole(ctx, owner, owner.User.ID, identity.RoleMember)
		if err != nil || m.Role != identity.RoleMember {
			t.Fatalf("demotion with two owners: %+v, %v", m, err)
		}
		wantData(t, lastEvent(t, env, identity.EventMemberRoleChanged, owner.Account.ID),
			map[string]any{"account_id": owner.Account.ID, "user_id": owner.User.ID, "old_role": "owner", "new_role": "member", "changed_by": owner.User.ID})
		newOwner := env.For(t, admin, owner.Account.ID)
		_, err = env.Service.ChangeRole(ctx, newOwner, newOwner.User.ID, identity.RoleAdmin)
		wantFields(t, err, field("role", "last_owner"))
	})
}

func TestRemoveMember(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		other := env.Join(t, owner, env.User(t, "other@example.com"), identity.RoleMember)

		writesNothing(t, env, func() {
			err := env.Service.RemoveMember(ctx, owner, owner.User.ID)
			wantCode(t, err, identity.CodeValidation)
			wantFields(t, err, field("user_id", "last_owner"))
			if err := env.Service.RemoveMember(ctx, admin, owner.User.ID); !errors.Is(err, identity.ErrOwnerByAdmin) {
				t.Errorf("admin removes owner: %v, want ErrOwnerByAdmin", err)
			}
			wantCode(t, env.Service.RemoveMember(ctx, admin, owner.User.ID), identity.CodeForbidden)
			wantCode(t, env.Service.RemoveMember(ctx, member, other.User.ID), identity.CodeForbidden)
			for _, id := range []string{"not-a-uuid", "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", strings.ToUpper(member.User.ID)} {
				if err := env.Service.RemoveMember(ctx, owner, id); !errors.Is(err, identity.ErrMemberNotFound) {
					t.Errorf("RemoveMember(%s): %v, want ErrMemberNotFound", id, err)
				}
			}
		})

		if err := env.Service.RemoveMember(ctx, admin, member.User.ID); err != nil {
			t.Fatal(err)
		}
		r := lastEvent(t, env, identity.EventMemberRemoved, owner.Account.ID)
		wantData(t, r, map[string]any{"account_id": owner.Account.ID, "user_id": member.User.ID, "removed_by": admin.User.ID})
		wantUnpublished(t, r, env.Clock.Now())
		if p := env.For(t, member, owner.Account.ID); p.Account != nil {
			t.Error("the removed member still sees the account")
		}
		// Anyone may leave (issue 32 item 30: a member below admin too); an
		// owner removes another owner when one remains.
		if err := env.Service.RemoveMember(ctx, other, other.User.ID); err != nil {
			t.Errorf("a member leaving: %v", err)
		}
		if err := env.Service.RemoveMember(ctx, admin, admin.User.ID); err != nil {
			t.Errorf("an admin leaving: %v", err)
		}
		second := env.Join(t, owner, env.User(t, "second@example.com"), identity.RoleMember)
		if _, err := env.Service.ChangeRole(ctx, owner, second.User.ID, identity.RoleOwner); err != nil {
			t.Fatal(err)
		}
		if err := env.Service.RemoveMember(ctx, owner, second.User.ID); err != nil {
			t.Errorf("owner removes the second owner: %v", err)
		}
		members, _, _ := env.Service.ListMembers(ctx, owner, allPage)
		if len(members) != 1 {
			t.Errorf("members left = %+v, want the owner alone", members)
		}
	})
}

// TestStalePrincipal: a principal is a snapshot taken when the request was
// authenticated. A role lost since then (demoted or removed by someone
// else in the meantime) must not still authorise owner-invariant changes.
func TestStalePrincipal(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		second := env.Join(t, owner, env.User(t, "second@example.com"), identity.RoleMember)
		if _, err := env.Service.ChangeRole(ctx, owner, second.User.ID, identity.RoleOwner); err != nil {
			t.Fatal(err)
		}
		second = env.For(t, second, owner.Account.ID) // an owner now
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)

		// owner demotes second while second's request is in flight.
		if _, err := env.Service.ChangeRole(ctx, owner, second.User.ID, identity.RoleMember); err != nil {
			t.Fatal(err)
		}
		writesNothing(t, env, func() {
			if _, err := env.Service.ChangeRole(ctx, second, member.User.ID, identity.RoleOwner); !errors.Is(err, identity.ErrRoleForbidden) {
				t.Errorf("a demoted owner's promotion: %v, want ErrRoleForbidden", err)
			}
			if err := env.Service.RemoveMember(ctx, second, owner.User.ID); !errors.Is(err, identity.ErrRoleForbidden) {
				t.Errorf("a demoted owner's removal of an owner: %v, want ErrRoleForbidden", err)
			}
		})
		// An admin removed meanwhile removes nobody.
		if err := env.Service.RemoveMember(ctx, owner, admin.User.ID); err != nil {
			t.Fatal(err)
		}
		writesNothing(t, env, func() {
			if err := env.Service.RemoveMember(ctx, admin, member.User.ID); !errors.Is(err, identity.ErrAccountNotFound) {
				t.Errorf("a removed admin's removal: %v, want ErrAccountNotFound", err)
			}
		})
	})
}
