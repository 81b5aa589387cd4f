package sqlstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestCreateAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		ada := env.User(t, "ada@example.com")
		env.Clock.Advance(time.Minute)
		now := env.Clock.Now()

		a, err := env.Service.CreateAccount(ctx, ada, "  Ácme Córp!  ")
		if err != nil {
			t.Fatal(err)
		}
		if a.Name != "Ácme Córp!" || a.Slug != "acme-corp" || a.Personal || a.Role != identity.RoleOwner ||
			!a.CreatedAt.Equal(now) || !a.UpdatedAt.Equal(now) || len(a.ID) != 36 {
			t.Errorf("account = %+v", a)
		}
		r := lastEvent(t, env, identity.EventAccountCreated, a.ID)
		wantData(t, r, map[string]any{"account_id": a.ID, "name": "Ácme Córp!", "slug": "acme-corp", "personal": false, "owner_user_id": ada.User.ID})
		wantUnpublished(t, r, now)

		members, _, err := env.Store.ListMembers(ctx, a.ID, allPage)
		if err != nil || len(members) != 1 || members[0].UserID != ada.User.ID || members[0].Role != identity.RoleOwner {
			t.Errorf("members = %+v, %v; want the creator as the only owner", members, err)
		}
		accounts, _, err := env.Service.ListAccounts(ctx, ada, allPage)
		if err != nil || len(accounts) != 2 || !accounts[0].Personal || accounts[1].ID != a.ID || accounts[1].Role != identity.RoleOwner {
			t.Errorf("ListAccounts = %+v, %v; want the personal account, then the team", accounts, err)
		}
		got := env.For(t, ada, a.ID).Account
		if got == nil || *got != a {
			t.Errorf("read back %+v, want %+v", got, a)
		}
	})
}

func TestAccountNames(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		ada := env.User(t, "ada@example.com")
		ok := []struct{ name, slug string }{
			{"Hello   World", "hello-world"},
			{"--Dash__and..dots--", "dash-and-dots"},
			{"Crème Brûlée 2", "creme-brulee-2"},
			{"Ärger 日本 Ölfass", "arger-olfass"},
			{"x", "x"},
			{strings.Repeat("a", 120), strings.Repeat("a", 63)},
			{strings.Repeat("é", 120), strings.Repeat("e", 63)},
			{strings.Repeat("word ", 23) + "end", strings.Repeat("word-", 11) + "word"}, // cut at a dash, not mid-word,
		}
		for _, tt := range ok {
			a, err := env.Service.CreateAccount(ctx, ada, tt.name)
			if err != nil {
				t.Errorf("CreateAccount(%q): %v", tt.name, err)
				continue
			}
			if a.Slug != tt.slug || !identity.ValidSlug(a.Slug) {
				t.Errorf("CreateAccount(%q) slug = %q, want %q", tt.name, a.Slug, tt.slug)
			}
		}
		refused := []struct {
			name string
			want errs.FieldError
		}{
			{"", field("name", "too_short")},
			{"   \t ", field("name", "too_short")},
			{strings.Repeat("b", 121), field("name", "too_long")},
			{strings.Repeat("ü", 121), field("name", "too_long")},
			{"日本語", field("name", "invalid")},
			{"!!! ???", field("name", "invalid")},
			{"Ωμέγα", field("name", "invalid")},
			{"ＦＵＬＬ ｗｉｄｔｈ", field("name", "invalid")}, // fullwidth: NFKC would change it
			{"Аcme", field("name", "invalid")},       // Cyrillic А among Latin letters
		}
		for _, tt := range refused {
			writesNothing(t, env, func() {
				_, err := env.Service.CreateAccount(ctx, ada, tt.name)
				wantCode(t, err, identity.CodeValidation)
				wantFields(t, err, tt.want)
			})
		}
	})
}

func TestAccountHandleCollision(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		ada := env.User(t, "ada@example.com")
		bob := env.User(t, "bob@example.com")
		if _, err := env.Service.CreateAccount(ctx, ada, "Acme Corp"); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			p    identity.Principal
			name string
		}{
			{ada, "Acme Corp"},
			{bob, "Acme Corp"},
			{bob, "acme-corp"},
			{bob, "ACME   corp!!"},
			{bob, "Ácme Cörp"},
		} {
			writesNothing(t, env, func() {
				_, err := env.Service.CreateAccount(ctx, tt.p, tt.name)
				if !errors.Is(err, identity.ErrSlugTaken) {
					t.Errorf("CreateAccount(%q): %v, want ErrSlugTaken", tt.name, err)
				}
				wantCode(t, err, identity.CodeConflict)
			})
		}
		// Two long names that differ only past the slug's 63 characters
		// derive one handle.
		base := strings.Repeat("n", 70)
		if _, err := env.Service.CreateAccount(ctx, ada, base+" one"); err != nil {
			t.Fatal(err)
		}
		writesNothing(t, env, func() {
			_, err := env.Service.CreateAccount(ctx, bob, base+" two")
			wantCode(t, err, identity.CodeConflict)
		})
	})
}

func TestRenameAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		created := owner.Account.CreatedAt
		env.Clock.Advance(time.Hour)

		a, err := env.Service.RenameAccount(ctx, admin, "  Totally Different  ")
		if err != nil {
			t.Fatal(err)
		}
		if a.Name != "Totally Different" || a.Slug != "acme-corp" || a.Role != identity.RoleAdmin ||
			!a.CreatedAt.Equal(created) || !a.UpdatedAt.Equal(env.Clock.Now()) || a.ID != owner.Account.ID {
			t.Errorf("renamed = %+v", a)
		}
		r := lastEvent(t, env, identity.EventAccountUpdated, a.ID)
		wantData(t, r, map[string]any{"account_id": a.ID, "name": "Totally Different"})
		wantUnpublished(t, r, env.Clock.Now())

		// The old name's handle stays taken; the new name's is not.
		_, err = env.Service.CreateAccount(ctx, member, "Acme Corp")
		wantCode(t, err, identity.CodeConflict)
		if _, err := env.Service.CreateAccount(ctx, member, "Totally Different"); err != nil {
			t.Errorf("the new name's handle was taken: %v", err)
		}

		outsider := env.For(t, env.User(t, "out@example.com"), owner.Account.ID)
		writesNothing(t, env, func() {
			_, err := env.Service.RenameAccount(ctx, member, "Mine Now")
			wantCode(t, err, identity.CodeForbidden)
			_, err = env.Service.RenameAccount(ctx, admin, " ")
			wantFields(t, err, field("name", "too_short"))
			_, err = env.Service.RenameAccount(ctx, admin, strings.Repeat("r", 121))
			wantFields(t, err, field("name", "too_long"))
			_, err = env.Service.RenameAccount(ctx, outsider, "Outsider")
			if !errors.Is(err, identity.ErrAccountNotFound) {
				t.Errorf("outsider rename: %v, want ErrAccountNotFound", err)
			}
		})
		if a, err := env.Service.RenameAccount(ctx, admin, strings.Repeat("r", 120)); err != nil || a.Slug != "acme-corp" {
			t.Errorf("120-character rename: %+v, %v", a, err)
		}
	})
}

func TestDeleteAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		other := env.Team(t, owner, "Other Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		if _, err := env.Service.Invite(ctx, owner, "later@example.com", identity.RoleMember); err != nil {
			t.Fatal(err)
		}
		pending, err := env.Service.Invite(ctx, owner, "pending@example.com", identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.Invite(ctx, other, "kept@example.com", identity.RoleMember); err != nil {
			t.Fatal(err)
		}
		personal := env.For(t, owner, personalAccount(t, env, owner).ID)

		writesNothing(t, env, func() {
			wantCode(t, env.Service.DeleteAccount(ctx, admin), identity.CodeForbidden)
			err := env.Service.DeleteAccount(ctx, personal)
			wantCode(t, err, identity.CodePersonalAccount)
			if e, _ := errs.As(err); e == nil || len(e.Fields) != 0 {
				t.Errorf("personal account refusal = %v", err)
			}
			// The store refuses on its own too.
			if err := env.Store.DeleteAccount(ctx, personal.Account.ID, personal.User.ID); !errors.Is(err, identity.ErrPersonalAccount) {
				t.Errorf("store delete of a personal account: %v", err)
			}
			if err := env.Store.DeleteAccount(ctx, "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d", owner.User.ID); !errors.Is(err, identity.ErrAccountNotFound) {
				t.Errorf("store delete of an unknown account: %v", err)
			}
			// A role lost since authentication is re-checked in the store.
			if err := env.Store.DeleteAccount(ctx, owner.Account.ID, admin.User.ID); !errors.Is(err, identity.ErrRoleForbidden) {
				t.Errorf("store delete by an admin: %v, want ErrRoleForbidden", err)
			}
		})

		id := owner.Account.ID
		if err := env.Service.DeleteAccount(ctx, owner); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"accounts WHERE id", "memberships WHERE account_id", "invitations WHERE account_id"} {
			var n int
			if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM `+table+` = $1`, id).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s = deleted account: %d rows, %v; want 0", table, n, err)
			}
		}
		if n := env.Count(t, "invitations"); n != 1 {
			t.Errorf("invitations left = %d, want the other account's 1", n)
		}
		wantData(t, lastEvent(t, env, identity.EventAccountDeleted, id), map[string]any{"account_id": id, "deleted_by": owner.User.ID})

		// Gone for everyone; its invitations with it.
		if p := env.For(t, owner, id); p.Account != nil {
			t.Errorf("the deleted account is still visible: %+v", p.Account)
		}
		joiner := env.User(t, "joiner@example.com")
		if _, err := env.Service.AcceptInvitation(ctx, joiner, pending.Token); !errors.Is(err, identity.ErrInvitationUnknown) {
			t.Errorf("accepting an invitation of a deleted account: %v, want ErrInvitationUnknown", err)
		}
		if p := env.For(t, owner, other.Account.ID); p.Account == nil {
			t.Error("deleting one account removed another")
		}
	})
}

func personalAccount(t *testing.T, env *identitytest.Env, p identity.Principal) identity.Account {
	t.Helper()
	accounts, _, err := env.Service.ListAccounts(ctx, p, allPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accounts {
		if a.Personal {
			return a
		}
	}
	t.Fatalf("%s has no personal account", p.User.Email)
	return identity.Account{}
}

func TestAuthorize(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		outsider := env.For(t, env.User(t, "out@example.com"), owner.Account.ID)
		tok := env.Login(t, "owner@example.com")

		if outsider.Account != nil {
			t.Fatalf("an outsider is a member: %+v", outsider.Account)
		}
		for _, id := range []string{"not-a-uuid", strings.ToUpper(owner.Account.ID), "{" + owner.Account.ID + "}", "urn:uuid:" + owner.Account.ID, strings.ReplaceAll(owner.Account.ID, "-", "")} {
			if p := env.Principal(t, tok, id); p.Account != nil {
				t.Errorf("account id %q named an account", id)
			}
		}
		tests := []struct {
			p    identity.Principal
			min  identity.Role
			want error
		}{
			{owner, identity.RoleOwner, nil},
			{admin, identity.RoleAdmin, nil},
			{admin, identity.RoleOwner, identity.ErrRoleForbidden},
			{member, identity.RoleMember, nil},
			{member, identity.RoleAdmin, identity.ErrRoleForbidden},
			{outsider, identity.RoleMember, identity.ErrAccountNotFound},
		}
		for _, tt := range tests {
			if err := identity.Authorize(tt.p, tt.min); !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
				t.Errorf("Authorize(%s as %v, %s) = %v, want %v", tt.p.User.Email, tt.p.Account, tt.min, err, tt.want)
			}
		}
	})
}
