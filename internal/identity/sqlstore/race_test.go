package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const racers = 100

// race runs fn(i) for i in [0, n) at once, released together, and
// returns the error codes it answered ("" for success) and every error
// that was not an expected refusal.
func race(n int, fn func(i int) error) (codes map[string]int, unexpected []error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	codes = map[string]int{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if _, ok := errs.As(err); !ok {
					unexpected = append(unexpected, err)
					return
				}
			}
			codes[errs.Code(err)]++
		}(i)
	}
	close(start)
	wg.Wait()
	return codes, unexpected
}

func wantNoUnexpected(t *testing.T, unexpected []error) {
	t.Helper()
	for i, err := range unexpected {
		if i == 5 {
			t.Errorf("… and %d more", len(unexpected)-5)
			break
		}
		t.Errorf("unexpected error: %v", err)
	}
}

// TestRaceLockout: concurrent wrong passwords count exactly up to the
// threshold, at a registered address and at one no user holds alike.
func TestRaceLockout(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, email := range []string{"ada@example.com", "nobody@example.com"} {
			t.Run(email, func(t *testing.T) {
				const threshold = 5
				env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold})
				env.Register(t, "ada@example.com")
				codes, unexpected := race(racers, func(int) error {
					_, _, err := env.Service.Login(ctx, email, "wrong password")
					return err
				})
				wantNoUnexpected(t, unexpected)
				if codes[identity.CodeUnauthorized] != threshold || codes[identity.CodeLocked] != racers-threshold {
					t.Errorf("answers = %v, want %d unauthorized and %d locked", codes, threshold, racers-threshold)
				}
				_, _, err := env.Service.Login(ctx, email, identitytest.Password)
				wantCode(t, err, identity.CodeLocked)
			})
		}
	})
}

// TestRaceLockoutWithRightPassword: wrong and right passwords at once
// never let a login through once the threshold is reached, and never
// overshoot the count.
func TestRaceLockoutWithRightPassword(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const threshold = 5
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold})
		env.Register(t, "ada@example.com")
		codes, unexpected := race(racers, func(i int) error {
			pw := "wrong password"
			if i%10 == 0 {
				pw = identitytest.Password
			}
			_, _, err := env.Service.Login(ctx, "ada@example.com", pw)
			return err
		})
		wantNoUnexpected(t, unexpected)
		if codes[identity.CodeUnauthorized]+codes[identity.CodeLocked]+codes[""] != racers {
			t.Errorf("answers = %v", codes)
		}
		n, until := failedLogins(t, env, "ada@example.com")
		if n >= threshold || n < 0 {
			t.Errorf("failed_logins = %d, want below the threshold", n)
		}
		if until != nil && codes[identity.CodeLocked] == 0 {
			t.Errorf("locked, yet no login answered locked: %v", codes)
		}
	})
}

func TestRaceAcceptInvitation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		users := make([]identity.Principal, racers)
		for i := range users {
			users[i] = env.User(t, fmt.Sprintf("u%03d@example.com", i))
		}
		// Only the invitee can accept: every racer is the invitee, each
		// with its own session.
		for i := 1; i < len(users); i++ {
			users[i] = env.Principal(t, env.Login(t, "u000@example.com"), "")
		}
		inv, err := env.Service.Invite(ctx, owner, "u000@example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		joinedBefore := len(eventsOf(t, env, identity.EventMemberJoined))
		codes, unexpected := race(racers, func(i int) error {
			_, err := env.Service.AcceptInvitation(ctx, users[i], inv.Token)
			return err
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[identity.CodeInvitationUsed] != racers-1 {
			t.Errorf("answers = %v, want 1 success and %d invitation_used", codes, racers-1)
		}
		var members int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE account_id = $1`, owner.Account.ID).Scan(&members); err != nil {
			t.Fatal(err)
		}
		if members != 2 {
			t.Errorf("memberships = %d, want the owner and one joiner", members)
		}
		if n := len(eventsOf(t, env, identity.EventMemberJoined)) - joinedBefore; n != 1 {
			t.Errorf("member.joined rows = %d, want 1", n)
		}
	})
}

// teamOfOwners creates a team account with n owners and returns a
// principal for each, in that account, the creator first.
func teamOfOwners(t *testing.T, env *identitytest.Env, n int) []identity.Principal {
	t.Helper()
	first := env.Team(t, env.User(t, "owner0@example.com"), "Acme Corp")
	ps := []identity.Principal{first}
	for i := 1; i < n; i++ {
		p := env.Join(t, first, env.User(t, fmt.Sprintf("owner%d@example.com", i)), identity.RoleMember)
		if _, err := env.Service.ChangeRole(ctx, first, p.User.ID, identity.RoleOwner); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, env.For(t, p, first.Account.ID))
	}
	return ps
}

// ownersOf counts the owners of account in the database.
func ownersOf(t *testing.T, env *identitytest.Env, account string) int {
	t.Helper()
	var n int
	if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE account_id = $1 AND role = 'owner'`, account).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRaceOwnersDemoteThemselves(t *testing.T) {
	for _, owners := range []int{2, 20} {
		t.Run(fmt.Sprintf("%dOwners", owners), func(t *testing.T) {
			sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
				env := identitytest.New(t, engine, identitytest.Config{})
				ps := teamOfOwners(t, env, owners)
				// Every owner, with a principal that says owner, steps down
				// at once; some several times over.
				codes, unexpected := race(racers, func(i int) error {
					p := ps[i%owners]
					_, err := env.Service.ChangeRole(ctx, p, p.User.ID, identity.RoleAdmin)
					return err
				})
				wantNoUnexpected(t, unexpected)
				if left := ownersOf(t, env, ps[0].Account.ID); left != 1 {
					t.Fatalf("owners left = %d, want exactly 1 (answers %v)", left, codes)
				}
				if n := len(eventsOf(t, env, identity.EventMemberRoleChanged)) - (owners - 1); n != owners-1 {
					t.Errorf("role_changed rows for the demotions = %d, want %d", n, owners-1)
				}
				if codes[identity.CodeValidation] == 0 {
					t.Errorf("no demotion was refused as last_owner: %v", codes)
				}
			})
		})
	}
}

// TestRaceOwnersRemoveEachOther: owners removing each other at once never
// leave the account without an owner.
func TestRaceOwnersRemoveEachOther(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const owners = 10
		env := identitytest.New(t, engine, identitytest.Config{})
		ps := teamOfOwners(t, env, owners)
		_, unexpected := race(racers, func(i int) error {
			by, target := ps[i%owners], ps[(i/owners+i+1)%owners]
			return env.Service.RemoveMember(ctx, by, target.User.ID)
		})
		wantNoUnexpected(t, unexpected)
		if left := ownersOf(t, env, ps[0].Account.ID); left < 1 {
			t.Fatalf("owners left = %d, want at least 1", left)
		}
	})
}

func TestRaceRegisterOneAddress(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		codes, unexpected := race(racers, func(i int) error {
			email := "ada@example.com"
			if i%2 == 1 {
				email = " ADA@Example.com "
			}
			_, err := env.Service.Register(ctx, identity.RegisterInput{Email: email, Password: identitytest.Password})
			return err
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[identity.CodeConflict] != racers-1 {
			t.Errorf("answers = %v, want 1 success and %d conflicts", codes, racers-1)
		}
		for table, want := range map[string]int{"users": 1, "accounts": 1, "memberships": 1, "outbox": 2} {
			if n := env.Count(t, table); n != want {
				t.Errorf("%s = %d, want %d", table, n, want)
			}
		}
	})
}

func TestRaceTeamAccountsOneName(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		const callers = 10
		ps := make([]identity.Principal, callers)
		for i := range ps {
			ps[i] = env.User(t, fmt.Sprintf("u%d@example.com", i))
		}
		before := len(eventsOf(t, env, identity.EventAccountCreated))
		names := []string{"Acme Corp", "acme corp", "ACME-CORP", "Ácme Corp"}
		codes, unexpected := race(racers, func(i int) error {
			_, err := env.Service.CreateAccount(ctx, ps[i%callers], names[i%len(names)])
			return err
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[identity.CodeConflict] != racers-1 {
			t.Errorf("answers = %v, want 1 success and %d conflicts", codes, racers-1)
		}
		var n int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE slug = 'acme-corp'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("accounts with the handle = %d, %v; want 1", n, err)
		}
		if got := len(eventsOf(t, env, identity.EventAccountCreated)) - before; got != 1 {
			t.Errorf("account.created rows = %d, want 1", got)
		}
		if got := env.Count(t, "memberships"); got != callers+1 {
			t.Errorf("memberships = %d, want %d personal + 1 team owner", got, callers)
		}
	})
}

func TestRaceLogoutAndUse(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		tok := env.Login(t, "ada@example.com")
		p := env.Principal(t, tok, "")
		_, unexpected := race(racers, func(i int) error {
			if i == racers/2 {
				return env.Service.Logout(ctx, p)
			}
			_, err := env.Service.Authenticate(ctx, tok, "")
			return err
		})
		wantNoUnexpected(t, unexpected)
		if _, err := env.Service.Authenticate(ctx, tok, ""); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("after logout: %v", err)
		}
	})
}
