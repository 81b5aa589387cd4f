package sqlstore_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestInvite(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		env.Clock.Advance(time.Minute)
		now := env.Clock.Now()

		inv, err := env.Service.Invite(ctx, admin, "  New.Person@Example.com ", identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		if inv.AccountID != owner.Account.ID || inv.Email != "new.person@example.com" || inv.Role != identity.RoleAdmin ||
			!inv.CreatedAt.Equal(now) || !inv.ExpiresAt.Equal(now.Add(7*24*time.Hour)) || len(inv.ID) != 36 || len(inv.Token) < 43 {
			t.Errorf("invitation = %+v", inv)
		}
		r := lastEvent(t, env, identity.EventMemberInvited, owner.Account.ID)
		wantData(t, r, map[string]any{
			"account_id": owner.Account.ID, "invitation_id": inv.ID, "email": "new.person@example.com", "role": "admin",
			"invited_by": admin.User.ID, "expires_at": now.Add(7 * 24 * time.Hour).Format(time.RFC3339Nano),
		})
		wantUnpublished(t, r, now)

		// Only the token's SHA-256 digest is kept: the raw token appears in
		// no column of the invitation, nor in the outbox.
		var cols [10]sql.NullString
		ptrs := make([]any, len(cols))
		for i := range cols {
			ptrs[i] = &cols[i]
		}
		if err := env.DB.QueryRow(ctx, `
			SELECT id, account_id, email, role, token_digest, invited_by, created_at, expires_at, accepted_at, accepted_by
			FROM invitations WHERE id = $1`, inv.ID).Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(inv.Token))
		if cols[4].String != hex.EncodeToString(sum[:]) {
			t.Errorf("token_digest = %q, want the token's SHA-256", cols[4].String)
		}
		for i, c := range cols {
			if strings.Contains(c.String, inv.Token) {
				t.Errorf("column %d holds the raw token", i)
			}
		}
		for _, row := range env.Outbox(t) {
			for k, v := range row.Data {
				if s, _ := v.(string); strings.Contains(s, inv.Token) {
					t.Errorf("outbox %s field %s holds the raw token", row.Type, k)
				}
			}
		}
		second, err := env.Service.Invite(ctx, owner, "new.person@example.com", identity.RoleMember)
		if err != nil || second.Token == inv.Token {
			t.Errorf("a second invitation to the same address: %v (tokens must differ)", err)
		}

		refused := []struct {
			name  string
			p     identity.Principal
			email string
			role  identity.Role
			code  string
			field string
		}{
			{"Owner", owner, "x@example.com", identity.RoleOwner, identity.CodeValidation, "role:invalid"},
			{"NoRole", owner, "x@example.com", "", identity.CodeValidation, "role:invalid"},
			{"UnknownRole", owner, "x@example.com", "root", identity.CodeValidation, "role:invalid"},
			{"NoEmail", owner, " ", identity.RoleMember, identity.CodeValidation, "email:required"},
			{"BadEmail", owner, "x@", identity.RoleMember, identity.CodeValidation, "email:invalid"},
			{"Member", member, "x@example.com", identity.RoleMember, identity.CodeForbidden, ""},
		}
		for _, tt := range refused {
			t.Run(tt.name, func(t *testing.T) {
				writesNothing(t, env, func() {
					_, err := env.Service.Invite(ctx, tt.p, tt.email, tt.role)
					wantCode(t, err, tt.code)
					if tt.field != "" {
						f := strings.Split(tt.field, ":")
						wantFields(t, err, field(f[0], f[1]))
					}
				})
			})
		}
	})
}

func TestAcceptInvitation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		joiner := env.User(t, "joiner@example.com")
		latecomer := env.User(t, "late@example.com")
		inv, err := env.Service.Invite(ctx, owner, "joiner@example.com", identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Hour)

		m, err := env.Service.AcceptInvitation(ctx, joiner, "  "+inv.Token+"\n")
		if err != nil {
			t.Fatal(err)
		}
		want := identity.Membership{AccountID: owner.Account.ID, UserID: joiner.User.ID, Email: "joiner@example.com", Role: identity.RoleAdmin, CreatedAt: env.Clock.Now()}
		if m != want {
			t.Errorf("membership = %+v, want %+v", m, want)
		}
		r := lastEvent(t, env, identity.EventMemberJoined, owner.Account.ID)
		wantData(t, r, map[string]any{"account_id": owner.Account.ID, "user_id": joiner.User.ID, "role": "admin", "invitation_id": inv.ID})
		wantUnpublished(t, r, env.Clock.Now())
		if p := env.For(t, joiner, owner.Account.ID); p.Account == nil || p.Account.Role != identity.RoleAdmin {
			t.Errorf("the joiner's view of the account: %+v", p.Account)
		}
		var acceptedBy string
		if err := env.DB.QueryRow(ctx, `SELECT accepted_by FROM invitations WHERE id = $1`, inv.ID).Scan(&acceptedBy); err != nil || acceptedBy != joiner.User.ID {
			t.Errorf("accepted_by = %q, %v", acceptedBy, err)
		}

		writesNothing(t, env, func() {
			for _, p := range []identity.Principal{latecomer, joiner} {
				_, err := env.Service.AcceptInvitation(ctx, p, inv.Token)
				if !errors.Is(err, identity.ErrInvitationUsed) {
					t.Errorf("second accept by %s: %v, want ErrInvitationUsed", p.User.Email, err)
				}
			}
			_, err := env.Service.AcceptInvitation(ctx, latecomer, inv.Token+"x")
			if !errors.Is(err, identity.ErrInvitationUnknown) {
				t.Errorf("wrong token: %v, want ErrInvitationUnknown", err)
			}
			wantCode(t, err, identity.CodeNotFound)
			if err.Error() != identity.ErrAccountNotFound.Error() {
				t.Errorf("wrong token says %q, unknown account says %q; want one sentence", err, identity.ErrAccountNotFound)
			}
			_, err = env.Service.AcceptInvitation(ctx, latecomer, "   ")
			wantFields(t, err, field("token", "required"))
		})

		if n := len(eventsOf(t, env, "identity.member.accepted")); n != 0 {
			t.Errorf("%d identity.member.accepted rows; the type is identity.member.joined", n)
		}
	})
}

func TestInvitationExpiry(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		tests := []struct {
			name  string
			after time.Duration
			err   error
		}{
			{"OneSecondBefore", 7*24*time.Hour - time.Second, nil},
			{"AtExpiry", 7 * 24 * time.Hour, identity.ErrInvitationExpired},
			{"OneSecondAfter", 7*24*time.Hour + time.Second, identity.ErrInvitationExpired},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				env.Clock.Advance(time.Minute)
				p := env.User(t, "joiner"+string(rune('a'+i))+"@example.com")
				inv, err := env.Service.Invite(ctx, owner, p.User.Email, identity.RoleMember)
				if err != nil {
					t.Fatal(err)
				}
				issued := env.Clock.Now()
				env.Clock.Set(issued.Add(tt.after))
				defer env.Clock.Set(issued)
				if tt.err == nil {
					if _, err := env.Service.AcceptInvitation(ctx, p, inv.Token); err != nil {
						t.Errorf("accept %v after issue: %v", tt.after, err)
					}
					return
				}
				writesNothing(t, env, func() {
					_, err := env.Service.AcceptInvitation(ctx, p, inv.Token)
					if !errors.Is(err, tt.err) {
						t.Errorf("accept %v after issue: %v, want %v", tt.after, err, tt.err)
					}
					wantCode(t, err, identity.CodeInvitationExpired)
				})
			})
		}
	})
}

func TestAcceptWhenAlreadyMember(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		other := env.User(t, "other@example.com")
		inv, err := env.Service.Invite(ctx, owner, "member@example.com", identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		writesNothing(t, env, func() {
			for _, p := range []identity.Principal{member} {
				_, err := env.Service.AcceptInvitation(ctx, p, inv.Token)
				if !errors.Is(err, identity.ErrAlreadyMember) {
					t.Errorf("accept by the member %s: %v, want ErrAlreadyMember", p.User.Email, err)
				}
				wantCode(t, err, identity.CodeConflict)
			}
		})
		// The member's role is unchanged, and the invitation still works.
		if p := env.For(t, member, owner.Account.ID); p.Account.Role != identity.RoleMember {
			t.Errorf("the member's role became %s", p.Account.Role)
		}
		if err := env.Service.RemoveMember(ctx, owner, member.User.ID); err != nil {
			t.Fatal(err)
		}
		_, err = env.Service.AcceptInvitation(ctx, other, inv.Token)
		wantCode(t, err, identity.CodeInvitationEmailMismatch)
		if m, err := env.Service.AcceptInvitation(ctx, member, inv.Token); err != nil || m.Role != identity.RoleAdmin {
			t.Errorf("accept by the invitee once no longer a member: %+v, %v", m, err)
		}
	})
}
