package sqlstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestRaceOwnersLeave: every owner leaving at once leaves exactly one.
func TestRaceOwnersLeave(t *testing.T) {
	for _, owners := range []int{2, 20} {
		t.Run(fmt.Sprintf("%dOwners", owners), func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				env := identitytest.New(t, engine, identitytest.Config{})
				ps := teamOfOwners(t, env, owners)
				before := len(eventsOf(t, env, identity.EventMemberRemoved))
				codes, unexpected := race(racers, func(i int) error {
					p := ps[i%owners]
					return env.Service.RemoveMember(ctx, p, p.User.ID)
				})
				wantNoUnexpected(t, unexpected)
				if left := ownersOf(t, env, ps[0].Account.ID); left != 1 {
					t.Fatalf("owners left = %d, want exactly 1 (answers %v)", left, codes)
				}
				if codes[""] != owners-1 || codes[identity.CodeValidation] == 0 {
					t.Errorf("answers = %v, want %d departures and the rest refused", codes, owners-1)
				}
				if n := len(eventsOf(t, env, identity.EventMemberRemoved)) - before; n != owners-1 {
					t.Errorf("member.removed rows = %d, want %d", n, owners-1)
				}
			})
		})
	}
}

// TestRaceInvitationEndsOnce: accepts, declines and revokes of one
// invitation at once: exactly one of them happens.
func TestRaceInvitationEndsOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		users := make([]identity.Principal, racers)
		for i := range users {
			users[i] = env.User(t, fmt.Sprintf("u%03d@example.com", i))
		}
		inv, err := env.Service.Invite(ctx, owner, "u000@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		joined, removed := len(eventsOf(t, env, identity.EventMemberJoined)), len(eventsOf(t, env, identity.EventMemberRemoved))
		codes, unexpected := race(racers, func(i int) error {
			switch i % 3 {
			case 0:
				_, err := env.Service.AcceptInvitation(ctx, users[0], inv.Token) // only the invitee may accept
				return err
			case 1:
				return env.Service.DeclineInvitation(ctx, users[i], inv.Token)
			default:
				return env.Service.RevokeInvitation(ctx, owner, inv.ID)
			}
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[""]+codes[identity.CodeInvitationUsed]+codes[identity.CodeNotFound] != racers {
			t.Errorf("answers = %v, want 1 success and the rest used or not found", codes)
		}
		var ends int
		if err := env.DB.QueryRow(ctx, `
			SELECT count(accepted_at) + count(declined_at) + count(revoked_at) FROM invitations WHERE id = $1`, inv.ID).Scan(&ends); err != nil {
			t.Fatal(err)
		}
		members := env.Count(t, "memberships") - (racers + 2) // personal accounts and the team's owner
		dJoined := len(eventsOf(t, env, identity.EventMemberJoined)) - joined
		dRemoved := len(eventsOf(t, env, identity.EventMemberRemoved)) - removed
		if ends != 1 || members != dJoined || dJoined+dRemoved > 1 {
			t.Errorf("ends = %d, new memberships = %d, joined rows = %d, removed rows = %d; want one end and its one event at most", ends, members, dJoined, dRemoved)
		}
	})
}

// TestRaceResendKillsTheOldToken: accepts with the first token racing
// resends: either an accept came first (one success, resends then find
// nothing open) or a resend did (the old token then accepts nothing).
func TestRaceResendKillsTheOldToken(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		users := make([]identity.Principal, racers)
		for i := range users {
			users[i] = env.User(t, fmt.Sprintf("u%03d@example.com", i))
		}
		inv, err := env.Service.Invite(ctx, owner, "anyone@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		var accepted, resent int
		codes, unexpected := race(racers, func(i int) error {
			if i%2 == 0 {
				_, err := env.Service.ResendInvitation(ctx, owner, inv.ID)
				return err
			}
			_, err := env.Service.AcceptInvitation(ctx, users[i], inv.Token)
			return err
		})
		wantNoUnexpected(t, unexpected)
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE account_id = $1`, owner.Account.ID).Scan(&accepted); err != nil {
			t.Fatal(err)
		}
		accepted--
		resent = codes[""] - accepted
		if accepted > 1 {
			t.Fatalf("the old token made %d members", accepted)
		}
		if accepted == 0 && resent == 0 {
			t.Errorf("answers = %v: neither an accept nor a resend happened", codes)
		}
		if _, err := env.Service.AcceptInvitation(ctx, env.User(t, "late@example.com"), inv.Token); err == nil {
			t.Error("the old token still accepts after the race")
		}
	})
}

// TestRaceStaffAdd: the same staff change made at once is audited and
// announced once.
func TestRaceStaffAdd(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		u := env.Register(t, "ada@example.com")
		codes, unexpected := race(racers, func(int) error {
			return env.Service.SetStaff(ctx, "ada@example.com", true, "cli")
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != racers {
			t.Errorf("answers = %v, want every call to succeed", codes)
		}
		if n := env.Count(t, "staff_audit"); n != 1 {
			t.Errorf("staff_audit rows = %d, want 1", n)
		}
		if rows := eventsOf(t, env, identity.EventStaffEnabled); len(rows) != 1 || rows[0].Subject != u.ID {
			t.Errorf("staff.enabled rows = %v, want one about %s", rows, u.ID)
		}
	})
}

// TestRaceWrongCurrentPasswords: wrong current passwords at once lock the
// user after exactly the threshold, as wrong sign-ins do.
func TestRaceWrongCurrentPasswords(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const threshold = 5
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold})
		p := env.User(t, "ada@example.com")
		codes, unexpected := race(racers, func(int) error {
			return env.Service.ChangePassword(ctx, p, "wrong password", "a brand new passphrase")
		})
		wantNoUnexpected(t, unexpected)
		if codes[identity.CodeInvalidCredentials] != threshold || codes[identity.CodeLocked] != racers-threshold {
			t.Errorf("answers = %v, want %d invalid_credentials and %d locked", codes, threshold, racers-threshold)
		}
	})
}

// TestRaceRawOwnerRemovals: owners' memberships deleted at once by plain
// statements (no store code, no account lock of its own) still leave one.
func TestRaceRawOwnerRemovals(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const owners = 10
		env := identitytest.New(t, engine, identitytest.Config{})
		ps := teamOfOwners(t, env, owners)
		acct := ps[0].Account.ID
		var (
			mu      sync.Mutex
			removed int
		)
		_, unexpected := race(racers, func(i int) error {
			res, err := env.DB.Exec(ctx, `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, acct, ps[i%owners].User.ID)
			if err != nil {
				return errs.New("refused", err.Error()) // the trigger's refusal is the expected answer
			}
			n, _ := res.RowsAffected()
			mu.Lock()
			removed += int(n)
			mu.Unlock()
			return nil
		})
		wantNoUnexpected(t, unexpected)
		if left := ownersOf(t, env, acct); left != 1 || removed != owners-1 {
			t.Fatalf("owners left = %d after %d removals, want exactly 1 after %d", left, removed, owners-1)
		}
	})
}
