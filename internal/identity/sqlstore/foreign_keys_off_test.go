package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func rawCount(t *testing.T, raw *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := raw.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestForeignKeyRulesHoldWithForeignKeysOff: on a SQLite connection with
// foreign keys off, as the sqlite3 shell's are, every reference of
// identity's schema is still refused when it names nothing or would be
// left dangling, and deleting a user or an account still cascades.
func TestForeignKeyRulesHoldWithForeignKeysOff(t *testing.T) {
	ctx := context.Background()
	env := identitytest.New(t, sqldb.SQLite, identitytest.Config{})
	raw := sqltest.RawSQLite(t, env.DB)

	owner := env.User(t, "owner@example.com")
	team := env.Team(t, owner, "Analytical Engines")
	member := env.Join(t, team, env.User(t, "member@example.com"), identity.RoleMember)
	if _, err := env.Service.Invite(ctx, team, "pending@example.com", identity.RoleMember); err != nil {
		t.Fatal(err)
	}
	teamID := team.Account.ID

	const ts = `'2026-01-01 00:00:00+00:00'`
	const nobody = "00000000-0000-4000-8000-000000000000"
	refused := []struct {
		name  string
		query string
		args  []any
	}{
		{"SessionOfNoUser", `INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES ('s-raw', ?, ` + ts + `, ` + ts + `)`, []any{nobody}},
		{"SessionMovedToNoUser", `UPDATE sessions SET user_id = ?`, []any{nobody}},
		{"MembershipOfNoAccount", `INSERT INTO memberships (account_id, user_id, role, created_at) VALUES (?, ?, 'member', ` + ts + `)`, []any{nobody, owner.User.ID}},
		{"MembershipOfNoUser", `INSERT INTO memberships (account_id, user_id, role, created_at) VALUES (?, ?, 'member', ` + ts + `)`, []any{teamID, nobody}},
		{"MembershipMovedToNoAccount", `UPDATE memberships SET account_id = ? WHERE account_id = ?`, []any{nobody, teamID}},
		{"MembershipMovedToNoUser", `UPDATE memberships SET user_id = ? WHERE account_id = ?`, []any{nobody, teamID}},
		{"InvitationOfNoAccount", `INSERT INTO invitations (id, account_id, email, role, token_digest, invited_by, created_at, expires_at)
			VALUES ('i-raw', ?, 'x@example.com', 'member', 'digest-raw', ?, ` + ts + `, ` + ts + `)`, []any{nobody, owner.User.ID}},
		{"InvitationMovedToNoAccount", `UPDATE invitations SET account_id = ?`, []any{nobody}},
		{"RenumberUserWithSessions", `UPDATE users SET id = ? WHERE id = ?`, []any{nobody, owner.User.ID}},
		{"RenumberAccountWithMembers", `UPDATE accounts SET id = ? WHERE id = ?`, []any{nobody, teamID}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := raw.Exec(tt.query, tt.args...)
			if err == nil {
				t.Fatalf("the database accepted it")
			}
			if !sqldb.IsForeignKeyViolation(err) {
				t.Errorf("refused with %v, want a foreign-key refusal", err)
			}
		})
	}
	sqltest.WantNoDanglingReferences(t, raw)

	t.Run("DeleteAccountCascades", func(t *testing.T) {
		if _, err := raw.Exec(`DELETE FROM accounts WHERE id = ?`, teamID); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"memberships", "invitations"} {
			if got := rawCount(t, raw, `SELECT count(*) FROM `+table+` WHERE account_id = ?`, teamID); got != 0 {
				t.Errorf("%s of the deleted account = %d, want 0", table, got)
			}
		}
		sqltest.WantNoDanglingReferences(t, raw)
	})
	t.Run("DeleteUserCascades", func(t *testing.T) {
		if _, err := raw.Exec(`DELETE FROM users WHERE id = ?`, member.User.ID); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"sessions", "memberships"} {
			if got := rawCount(t, raw, `SELECT count(*) FROM `+table+` WHERE user_id = ?`, member.User.ID); got != 0 {
				t.Errorf("%s of the deleted user = %d, want 0", table, got)
			}
		}
		if got := rawCount(t, raw, `SELECT count(*) FROM memberships WHERE user_id = ?`, owner.User.ID); got == 0 {
			t.Errorf("the owner's own memberships went with another user")
		}
		sqltest.WantNoDanglingReferences(t, raw)
	})
}

// TestForeignKeysOffRace races a foreign-keys-off connection deleting a
// user and an account against logins of that user and invitations into
// that account through the service: whatever the interleaving, no
// session, membership or invitation is left naming a deleted row.
func TestForeignKeysOffRace(t *testing.T) {
	ctx := context.Background()
	env := identitytest.New(t, sqldb.SQLite, identitytest.Config{})
	raw := sqltest.RawSQLite(t, env.DB)

	owner := env.User(t, "owner@example.com")
	team := env.Team(t, owner, "Analytical Engines")
	env.Register(t, "leaver@example.com")

	const n = 40
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			switch {
			case i == n/2:
				if _, err := raw.Exec(`DELETE FROM users WHERE email = 'leaver@example.com'`); err != nil {
					t.Errorf("delete user: %v", err)
				}
				if _, err := raw.Exec(`DELETE FROM accounts WHERE id = ?`, team.Account.ID); err != nil {
					t.Errorf("delete account: %v", err)
				}
			case i%2 == 0:
				// Refused once the user is gone; never half-written.
				_, _, _ = env.Service.Login(ctx, "leaver@example.com", identitytest.Password)
			default:
				_, _ = env.Service.Invite(ctx, team, fmt.Sprintf("invitee%d@example.com", i), identity.RoleMember)
			}
		}()
	}
	close(start)
	wg.Wait()

	if got := rawCount(t, raw, `SELECT count(*) FROM invitations WHERE account_id = ?`, team.Account.ID); got != 0 {
		t.Errorf("invitations of the deleted account = %d, want 0", got)
	}
	if got := rawCount(t, raw, `SELECT count(*) FROM sessions WHERE user_id NOT IN (SELECT id FROM users)`); got != 0 {
		t.Errorf("sessions of a deleted user = %d, want 0", got)
	}
	sqltest.WantNoDanglingReferences(t, raw)
}
