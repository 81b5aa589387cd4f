package sqlstore_test

import (
	"github.com/google/uuid"

	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestInviteDetailNamesTheField: the detail of a refused invitation speaks
// of the fields its errors list names, and of no other (issue 32 item 11:
// a malformed email was answered "role must be admin or member").
func TestInviteDetailNamesTheField(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		for _, tt := range []struct {
			name        string
			email       string
			role        identity.Role
			want, never []string
		}{
			{"BadEmail", "not-an-address", identity.RoleMember, []string{"email"}, []string{"role"}},
			{"NoEmail", "", identity.RoleMember, []string{"email"}, []string{"role"}},
			{"BadRole", "x@example.com", identity.RoleOwner, []string{"role must be admin or member"}, []string{"email"}},
			{"Both", "x@", "boss", []string{"email", "role"}, nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := env.Service.Invite(ctx, owner, tt.email, tt.role)
				e, ok := errsAs(err)
				if !ok || e.Code != identity.CodeValidation {
					t.Fatalf("error = %v, want validation_failed", err)
				}
				for _, w := range tt.want {
					if !strings.Contains(e.Message, w) {
						t.Errorf("detail %q does not mention %q", e.Message, w)
					}
				}
				for _, n := range tt.never {
					if strings.Contains(e.Message, n) {
						t.Errorf("detail %q mentions %q, which has no error", e.Message, n)
					}
				}
			})
		}
	})
}

// openInvitationIDs lists the ids of p's account's open invitations.
func openInvitationIDs(t *testing.T, env *identitytest.Env, p identity.Principal) []string {
	t.Helper()
	invs, _, err := env.Service.ListInvitations(ctx, p, allPage)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, inv := range invs {
		if inv.Token != "" {
			t.Errorf("listed invitation %s carries its token", inv.ID)
		}
		ids = append(ids, inv.ID)
	}
	return ids
}

func TestListInvitations(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		other := env.Team(t, env.User(t, "other@example.com"), "Other Corp")
		invite := func(p identity.Principal, email string) identity.Invitation {
			t.Helper()
			env.Clock.Advance(time.Second)
			inv, err := env.Service.Invite(ctx, p, email, identity.RoleMember)
			if err != nil {
				t.Fatal(err)
			}
			return inv
		}
		pending, expiring, declined, revoked := invite(owner, "a@example.com"), invite(owner, "b@example.com"), invite(owner, "c@example.com"), invite(owner, "d@example.com")
		invite(other, "e@example.com")
		if err := env.Service.DeclineInvitation(ctx, env.User(t, "c@example.com"), declined.Token); err != nil {
			t.Fatal(err)
		}
		if err := env.Service.RevokeInvitation(ctx, owner, revoked.ID); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(identity.InvitationTTL - time.Second) // the first has expired, the second not yet
		got := openInvitationIDs(t, env, owner)
		if want := []string{pending.ID, expiring.ID}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("open invitations = %v, want %v (the expired one listed, answered ones not, another account's not)", got, want)
		}
		if _, _, err := env.Service.ListInvitations(ctx, member, allPage); err == nil {
			t.Error("a member listed invitations")
		} else {
			wantCode(t, err, identity.CodeForbidden)
		}
		page, next, err := env.Service.ListInvitations(ctx, owner, identity.PageRequest{Limit: 1})
		if err != nil || len(page) != 1 || next == nil {
			t.Fatalf("first page of one: %v, %v, %v", page, next, err)
		}
		rest, next, err := env.Service.ListInvitations(ctx, owner, identity.PageRequest{Limit: 1, After: next})
		if err != nil || len(rest) != 1 || rest[0].ID != expiring.ID {
			t.Fatalf("second page: %v, %v, %v", rest, next, err)
		}
	})
}

func TestRevokeInvitation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		other := env.Team(t, env.User(t, "other@example.com"), "Other Corp")
		invitee := env.User(t, "invitee@example.com")
		inv, err := env.Service.Invite(ctx, owner, "invitee@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		foreign, err := env.Service.Invite(ctx, other, "invitee@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name string
			p    identity.Principal
			id   string
			code string
		}{
			{"ErrMember", member, inv.ID, identity.CodeForbidden},
			{"ErrAnotherAccounts", admin, foreign.ID, identity.CodeNotFound},
			{"ErrMalformedID", admin, "not-a-uuid", identity.CodeNotFound},
			{"ErrUnknownID", admin, member.User.ID, identity.CodeNotFound},
		} {
			t.Run(tt.name, func(t *testing.T) {
				writesNothing(t, env, func() {
					wantCode(t, env.Service.RevokeInvitation(ctx, tt.p, tt.id), tt.code)
				})
			})
		}
		if err := env.Service.RevokeInvitation(ctx, admin, inv.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, env.Service.RevokeInvitation(ctx, admin, inv.ID), identity.CodeNotFound)
		_, err = env.Service.AcceptInvitation(ctx, invitee, inv.Token)
		wantCode(t, err, identity.CodeNotFound)
		wantCode(t, env.Service.DeclineInvitation(ctx, invitee, inv.Token), identity.CodeNotFound)
		_, err = env.Service.ResendInvitation(ctx, admin, inv.ID)
		wantCode(t, err, identity.CodeNotFound)
	})
}

func TestResendInvitation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		admin := env.Join(t, owner, env.User(t, "admin@example.com"), identity.RoleAdmin)
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		invitee := env.User(t, "invitee@example.com")
		inv, err := env.Service.Invite(ctx, owner, "invitee@example.com", identity.RoleAdmin)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(identity.InvitationTTL + time.Hour) // expired: resending revives it
		now := env.Clock.Now()
		_, err = env.Service.ResendInvitation(ctx, member, inv.ID)
		wantCode(t, err, identity.CodeForbidden)
		again, err := env.Service.ResendInvitation(ctx, admin, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != inv.ID || again.Token == inv.Token || len(again.Token) != 43 || !again.ExpiresAt.Equal(now.Add(identity.InvitationTTL)) ||
			again.Email != "invitee@example.com" || again.Role != identity.RoleAdmin || !again.CreatedAt.Equal(inv.CreatedAt) {
			t.Errorf("resent = %+v, want the same invitation with a new token expiring %v", again, now.Add(identity.InvitationTTL))
		}
		r := lastEvent(t, env, identity.EventMemberInvited, owner.Account.ID)
		wantData(t, r, map[string]any{
			"account_id": owner.Account.ID, "invitation_id": inv.ID, "email": "invitee@example.com", "role": "admin",
			"invited_by": admin.User.ID, "expires_at": now.Add(identity.InvitationTTL).Format(time.RFC3339Nano),
		})
		_, err = env.Service.AcceptInvitation(ctx, invitee, inv.Token)
		wantCode(t, err, identity.CodeNotFound) // the old token is dead
		m, err := env.Service.AcceptInvitation(ctx, invitee, again.Token)
		if err != nil || m.Role != identity.RoleAdmin {
			t.Fatalf("accept with the new token: %+v, %v", m, err)
		}
		_, err = env.Service.ResendInvitation(ctx, admin, inv.ID)
		wantCode(t, err, identity.CodeNotFound) // accepted: no longer open
	})
}

func TestDeclineInvitation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		invitee := env.User(t, "invitee@example.com")
		inv, err := env.Service.Invite(ctx, owner, "invitee@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, env.Service.DeclineInvitation(ctx, invitee, " "), identity.CodeValidation)
		wantCode(t, env.Service.DeclineInvitation(ctx, invitee, "no-such-token"), identity.CodeNotFound)
		if err := env.Service.DeclineInvitation(ctx, invitee, inv.Token); err != nil {
			t.Fatal(err)
		}
		r := lastEvent(t, env, identity.EventMemberRemoved, owner.Account.ID)
		wantData(t, r, map[string]any{"account_id": owner.Account.ID, "user_id": invitee.User.ID, "removed_by": invitee.User.ID})
		writesNothing(t, env, func() {
			wantCode(t, env.Service.DeclineInvitation(ctx, invitee, inv.Token), identity.CodeInvitationUsed)
			_, err := env.Service.AcceptInvitation(ctx, invitee, inv.Token)
			wantCode(t, err, identity.CodeInvitationUsed)
		})
		if invitee := env.For(t, invitee, owner.Account.ID); invitee.Account != nil {
			t.Error("declining made the invitee a member")
		}

		late, err := env.Service.Invite(ctx, owner, "invitee@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(identity.InvitationTTL)
		wantCode(t, env.Service.DeclineInvitation(ctx, invitee, late.Token), identity.CodeInvitationExpired)
	})
}

// TestInvitationEndsOnceInTheDatabase: no connection can mark an
// invitation both accepted and declined (or revoked), whatever the code.
func TestInvitationEndsOnceInTheDatabase(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		inv, err := env.Service.Invite(ctx, owner, "invitee@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		now := sqldb.Timestamp(env.Clock.Now())
		if _, err := env.DB.Exec(ctx, `UPDATE invitations SET declined_at = $2 WHERE id = $1`, inv.ID, now); err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"accepted_at", "revoked_at"} {
			if _, err := env.DB.Exec(ctx, `UPDATE invitations SET `+col+` = $2 WHERE id = $1`, inv.ID, now); err == nil {
				t.Errorf("a declined invitation took %s as well", col)
			}
		}
	})
}

func TestLeaveAccount(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		member := env.Join(t, owner, env.User(t, "member@example.com"), identity.RoleMember)
		second := env.Join(t, owner, env.User(t, "second@example.com"), identity.RoleMember)
		if _, err := env.Service.ChangeRole(ctx, owner, second.User.ID, identity.RoleOwner); err != nil {
			t.Fatal(err)
		}
		second = env.For(t, second, owner.Account.ID)

		// A member (below the admin that removing others needs) leaves.
		if err := env.Service.RemoveMember(ctx, member, member.User.ID); err != nil {
			t.Fatalf("member leaves: %v", err)
		}
		r := lastEvent(t, env, identity.EventMemberRemoved, owner.Account.ID)
		wantData(t, r, map[string]any{"account_id": owner.Account.ID, "user_id": member.User.ID, "removed_by": member.User.ID})
		if again := env.For(t, member, owner.Account.ID); again.Account != nil {
			t.Error("the member is still a member after leaving")
		}
		// Leaving again with a stale principal: no longer a member.
		wantCode(t, env.Service.RemoveMember(ctx, member, member.User.ID), identity.CodeNotFound)

		// One of two owners leaves; the last one cannot.
		if err := env.Service.RemoveMember(ctx, second, second.User.ID); err != nil {
			t.Fatalf("second owner leaves: %v", err)
		}
		writesNothing(t, env, func() {
			err := env.Service.RemoveMember(ctx, owner, owner.User.ID)
			wantFields(t, err, field("user_id", identity.RuleLastOwner))
		})
		// Nor can anyone leave their personal account, of which they are the only owner.
		personal := env.For(t, owner, personalAccount(t, env, owner).ID)
		wantFields(t, env.Service.RemoveMember(ctx, personal, owner.User.ID), field("user_id", identity.RuleLastOwner))
	})
}

func TestSessionList(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		env.Register(t, "bob@example.com")
		start := env.Clock.Now()
		first := env.Login(t, "ada@example.com")
		env.Clock.Advance(time.Minute)
		second := env.Login(t, "ada@example.com")
		env.Login(t, "bob@example.com")
		ended := env.Login(t, "ada@example.com")
		if err := env.Service.Logout(ctx, env.Principal(t, ended, "")); err != nil {
			t.Fatal(err)
		}
		p := env.Principal(t, second, "")
		sessions, err := env.Service.ListSessions(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) != 2 || sessions[0].ID != p.SessionID || !sessions[1].CreatedAt.Equal(start) {
			t.Fatalf("sessions = %+v, want ada's two live ones, newest first", sessions)
		}

		// last_seen_at moves only when it is over a minute old, so a busy
		// session does not write on every request.
		lastSeen := func() time.Time {
			t.Helper()
			ss, err := env.Service.ListSessions(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return ss[1].LastSeenAt
		}
		if got := lastSeen(); !got.Equal(start) {
			t.Errorf("last_seen_at before any use = %v, want the sign-in time %v", got, start)
		}
		// The clock is a minute past the sign-in: not older than a minute.
		env.Principal(t, first, "")
		if got := lastSeen(); !got.Equal(start) {
			t.Errorf("last_seen_at after a use a minute later = %v, want %v unchanged", got, start)
		}
		env.Clock.Advance(30 * time.Second)
		used := env.Clock.Now()
		env.Principal(t, first, "")
		if got := lastSeen(); !got.Equal(used) {
			t.Errorf("last_seen_at after a use %v later = %v, want %v", used.Sub(start), got, used)
		}
		env.Clock.Advance(59 * time.Second)
		env.Principal(t, first, "")
		if got := lastSeen(); !got.Equal(used) {
			t.Errorf("last_seen_at 59s after the last write = %v, want %v", got, used)
		}
		env.Clock.Advance(2 * time.Second)
		env.Principal(t, first, "")
		if got := lastSeen(); !got.Equal(env.Clock.Now()) {
			t.Errorf("last_seen_at 61s after the last write = %v, want %v", got, env.Clock.Now())
		}
	})
}

func TestEndOtherSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		env.Register(t, "bob@example.com")
		a1, a2, a3 := env.Login(t, "ada@example.com"), env.Login(t, "ada@example.com"), env.Login(t, "ada@example.com")
		bob := env.Login(t, "bob@example.com")
		if err := env.Service.EndOtherSessions(ctx, env.Principal(t, a2, "")); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name  string
			token string
			live  bool
		}{{"Other", a1, false}, {"AnotherOther", a3, false}, {"Current", a2, true}, {"AnotherUsers", bob, true}} {
			_, err := env.Service.Authenticate(ctx, tt.token, "")
			if got := err == nil; got != tt.live {
				t.Errorf("%s session live = %v (%v), want %v", tt.name, got, err, tt.live)
			}
		}
	})
}

func TestChangePassword(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const threshold = 3
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold})
		env.Register(t, "ada@example.com")
		other, current := env.Login(t, "ada@example.com"), env.Login(t, "ada@example.com")
		p := env.Principal(t, current, "")
		const next = "a brand new passphrase"

		for _, tt := range []struct {
			name, current, next string
			fields              []string
		}{
			{"ErrNoCurrent", "", next, []string{"current_password:required"}},
			{"ErrShort", identitytest.Password, "short", []string{"new_password:too_short"}},
			{"ErrLong", identitytest.Password, strings.Repeat("x", identity.PasswordMax+1), []string{"new_password:too_long"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				writesNothing(t, env, func() {
					err := env.Service.ChangePassword(ctx, p, tt.current, tt.next)
					f := strings.Split(tt.fields[0], ":")
					wantFields(t, err, field(f[0], f[1]))
				})
			})
		}
		wantCode(t, env.Service.ChangePassword(ctx, p, "wrong password", next), identity.CodeInvalidCredentials)
		if n, _ := failedLogins(t, env, "ada@example.com"); n != 1 {
			t.Errorf("failed_logins after a wrong current password = %d, want 1 (it counts as a failed sign-in)", n)
		}
		if err := env.Service.ChangePassword(ctx, p, identitytest.Password, next); err != nil {
			t.Fatal(err)
		}
		if n, _ := failedLogins(t, env, "ada@example.com"); n != 0 {
			t.Errorf("failed_logins after the change = %d, want 0", n)
		}
		if _, err := env.Service.Authenticate(ctx, other, ""); err == nil {
			t.Error("another session survived the password change")
		}
		env.Principal(t, current, "")
		if _, _, err := env.Service.Login(ctx, "ada@example.com", identitytest.Password); err == nil {
			t.Error("the old password still signs in")
		}
		if _, _, err := env.Service.Login(ctx, "ada@example.com", next); err != nil {
			t.Errorf("the new password does not sign in: %v", err)
		}

		// Wrong current passwords lock the user as wrong sign-ins do, and
		// then even the right one is refused.
		for i := 0; i < threshold-1; i++ {
			wantCode(t, env.Service.ChangePassword(ctx, p, "wrong password", "whatever else"), identity.CodeInvalidCredentials)
		}
		wantCode(t, env.Service.ChangePassword(ctx, p, "wrong password", "whatever else"), identity.CodeInvalidCredentials)
		wantLocked(t, env.Service.ChangePassword(ctx, p, next, "whatever else"), 15*time.Minute)
		_, _, err := env.Service.Login(ctx, "ada@example.com", next)
		wantCode(t, err, identity.CodeLocked)

		// A change proven just before the session ended changes nothing.
		env.Clock.Advance(16 * time.Minute)
		if err := env.Service.Logout(ctx, p); err != nil {
			t.Fatal(err)
		}
		wantCode(t, env.Store.ChangePassword(ctx, p.User.ID, p.SessionID, "x", identity.OutgoingMail{ID: uuid.NewString(), Template: identity.TemplatePasswordChangedNotice}), identity.CodeUnauthorized)
	})
}

func TestStaffChangesAreAudited(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		u := env.Register(t, "ada@example.com")
		audit := func() []string {
			t.Helper()
			rows, err := env.DB.Query(ctx, `SELECT user_id, action, actor FROM staff_audit ORDER BY created_at, action`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var id, action, actor string
				if err := rows.Scan(&id, &action, &actor); err != nil {
					t.Fatal(err)
				}
				out = append(out, id+" "+action+" "+actor)
			}
			return out
		}
		if err := env.Service.SetStaff(ctx, "ADA@example.com", true, "cli:root"); err != nil {
			t.Fatal(err)
		}
		r := lastEvent(t, env, identity.EventStaffEnabled, u.ID)
		wantData(t, r, map[string]any{"user_id": u.ID})
		writesNothing(t, env, func() {
			if err := env.Service.SetStaff(ctx, "ada@example.com", true, "cli:root"); err != nil {
				t.Fatal(err)
			}
		})
		env.Clock.Advance(time.Second)
		if err := env.Service.SetStaff(ctx, "ada@example.com", false, "cli:ops"); err != nil {
			t.Fatal(err)
		}
		lastEvent(t, env, identity.EventStaffDisabled, u.ID)
		want := []string{u.ID + " enabled cli:root", u.ID + " disabled cli:ops"}
		if got := audit(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("staff_audit = %v, want %v", got, want)
		}
		wantCode(t, env.Service.SetStaff(ctx, "nobody@example.com", true, "cli"), identity.CodeNotFound)

		// The console reads the trail newest first, a page at a time.
		first, next, err := env.Store.StaffChanges(ctx, identity.PageRequest{Limit: 1})
		if err != nil || len(first) != 1 || next == nil || first[0].Action != "disabled" || first[0].Actor != "cli:ops" ||
			first[0].Email != "ada@example.com" || first[0].UserID != u.ID {
			t.Fatalf("StaffChanges first page = %+v, %v, %v", first, next, err)
		}
		older, next, err := env.Store.StaffChanges(ctx, identity.PageRequest{After: next, Limit: 1})
		if err != nil || len(older) != 1 || next != nil || older[0].Action != "enabled" || older[0].Actor != "cli:root" {
			t.Fatalf("StaffChanges older page = %+v, %v, %v", older, next, err)
		}

		// The trail is append-only for every connection.
		for _, q := range []string{`UPDATE staff_audit SET actor = 'someone else'`, `DELETE FROM staff_audit`} {
			if _, err := env.DB.Exec(ctx, q); err == nil {
				t.Errorf("%s: succeeded on the audit trail", q)
			}
		}
		if got := audit(); len(got) != 2 {
			t.Errorf("staff_audit after tampering = %v", got)
		}
	})
}

// TestLastOwnerInTheDatabase: statements from any connection, not only the
// store's, cannot leave an account without an owner; deleting the account
// or the user still takes the memberships with it.
func TestLastOwnerInTheDatabase(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		ps := teamOfOwners(t, env, 2)
		acct := ps[0].Account.ID
		if _, err := env.DB.Exec(ctx, `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, acct, ps[1].User.ID); err != nil {
			t.Fatalf("removing one of two owners: %v", err)
		}
		for _, q := range []string{
			`DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`,
			`UPDATE memberships SET role = 'admin' WHERE account_id = $1 AND user_id = $2`,
			`DELETE FROM memberships WHERE account_id = $1 AND user_id = $2 AND role = 'owner'`,
		} {
			if _, err := env.DB.Exec(ctx, q, acct, ps[0].User.ID); err == nil {
				t.Errorf("%s: succeeded on the last owner", q)
			}
		}
		if n := ownersOf(t, env, acct); n != 1 {
			t.Fatalf("owners = %d, want 1", n)
		}
		// A user with a personal and a team account is deleted outright;
		// another team account is deleted with its sole owner's membership.
		doomed := env.User(t, "doomed@example.com")
		env.Team(t, doomed, "Doomed Corp")
		if _, err := env.DB.Exec(ctx, `DELETE FROM users WHERE id = $1`, doomed.User.ID); err != nil {
			t.Errorf("deleting a user who owns accounts: %v", err)
		}
		if err := env.Service.DeleteAccount(ctx, ps[0]); err != nil {
			t.Errorf("deleting the account: %v", err)
		}
	})
}
