//go:build e2e

package scaleout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box/accountdeleted"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/testutil"
)

// invariant is a query counting the rows that break a rule; it must
// answer 0.
type invariant struct {
	rule  string
	query string
}

// checkEvents ties the outbox to the load's answers: each change answered
// 2xx wrote its event in its transaction, and nothing else was written.
func checkEvents(t *testing.T, c *cluster, rec *recorder) {
	t.Helper()
	want := map[string]int{
		identity.EventUserCreated:       len(rec.users),
		identity.EventAccountCreated:    len(rec.users) + len(rec.teams), // a personal account per user
		identity.EventUserEmailVerified: rec.verified,
		identity.EventMemberInvited:     rec.invited,
		identity.EventMemberJoined:      rec.joined,
		identity.EventAccountDeleted:    len(rec.deletions),
		identity.EventStaffEnabled:      1,
	}
	for _, typ := range column(t, c.identityDB, `SELECT DISTINCT type FROM outbox`) {
		if _, ok := want[typ]; !ok {
			t.Errorf("the outbox holds %s events, which the load did not cause", typ)
		}
	}
	for typ, n := range want {
		if got := count(t, c.identityDB, `SELECT count(*) FROM outbox WHERE type = $1`, typ); got != n {
			t.Errorf("%d %s rows in the outbox, want %d (one per change answered 2xx)", got, typ, n)
		}
	}
	sameSet(t, "user.created subjects", column(t, c.identityDB, `SELECT subject FROM outbox WHERE type = $1`, identity.EventUserCreated), rec.users)
	var deleted []string
	for _, d := range rec.deletions {
		deleted = append(deleted, d.account)
	}
	sameSet(t, "account.deleted subjects", column(t, c.identityDB, `SELECT subject FROM outbox WHERE type = $1`, identity.EventAccountDeleted), deleted)
	created := column(t, c.identityDB, `SELECT subject FROM outbox WHERE type = $1`, identity.EventAccountCreated)
	for _, team := range rec.teams {
		if !slices.Contains(created, team) {
			t.Errorf("team account %s answered 201 without an account.created event", team)
		}
	}
}

// checkIdentity checks identity.md's invariants on its database.
func checkIdentity(t *testing.T, c *cluster, rec *recorder) {
	t.Helper()
	for _, inv := range []invariant{
		{"every account has an owner (section 3: the last owner is never removed)",
			`SELECT count(*) FROM accounts a WHERE NOT EXISTS (
				SELECT 1 FROM memberships m WHERE m.account_id = a.id AND m.role = 'owner')`},
		{"every user owns exactly one personal account (section 1: registration creates it)",
			`SELECT count(*) FROM users u WHERE (
				SELECT count(*) FROM memberships m JOIN accounts a ON a.id = m.account_id
				WHERE m.user_id = u.id AND a.personal AND m.role = 'owner') <> 1`},
		{"a personal account has its user alone",
			`SELECT count(*) FROM accounts a WHERE a.personal AND (
				SELECT count(*) FROM memberships m WHERE m.account_id = a.id) <> 1`},
		{"an accepted invitation made its holder a member with the invited role",
			`SELECT count(*) FROM invitations i WHERE i.accepted_at IS NOT NULL AND NOT EXISTS (
				SELECT 1 FROM memberships m WHERE m.account_id = i.account_id AND m.user_id = i.accepted_by AND m.role = i.role)`},
		{"an invitation ends at most once (accepted, declined or revoked)",
			`SELECT count(*) FROM invitations
			WHERE (accepted_at IS NOT NULL)::int + (declined_at IS NOT NULL)::int + (revoked_at IS NOT NULL)::int > 1`},
		{"an invitation's role is admin or member, never owner",
			`SELECT count(*) FROM invitations WHERE role NOT IN ('admin', 'member')`},
		{"an email belongs to one user",
			`SELECT count(*) FROM (SELECT email FROM users GROUP BY email HAVING count(*) > 1) d`},
		{"a slug names one account",
			`SELECT count(*) FROM (SELECT slug FROM accounts GROUP BY slug HAVING count(*) > 1) d`},
		{"a slug is one DNS label of lower-case alphanumerics and single dashes",
			`SELECT count(*) FROM accounts WHERE slug !~ '^[a-z0-9]+(-[a-z0-9]+)*$' OR length(slug) > 63`},
	} {
		if n := count(t, c.identityDB, inv.query); n != 0 {
			t.Errorf("identity: %s: %d rows break it", inv.rule, n)
		}
	}
	if n := count(t, c.identityDB, `SELECT count(*) FROM users`); n != len(rec.users) {
		t.Errorf("identity holds %d users, %d registrations answered 201", n, len(rec.users))
	}
	if n := count(t, c.identityDB, `SELECT count(*) FROM accounts WHERE NOT personal`); n != len(rec.teams)-len(rec.deletions) {
		t.Errorf("identity holds %d team accounts, want %d created less %d deleted", n, len(rec.teams), len(rec.deletions))
	}
	// A deleted account's invitations went with it.
	if n := count(t, c.identityDB, `SELECT count(*) FROM invitations WHERE accepted_at IS NOT NULL`); n+len(rec.deletions) != rec.joined {
		t.Errorf("%d accepted invitations kept and %d deleted with their accounts, %d acceptances answered 200", n, len(rec.deletions), rec.joined)
	}
	for _, d := range rec.deletions {
		if n := count(t, c.identityDB, `SELECT count(*) FROM accounts WHERE id = $1`, d.account); n != 0 {
			t.Errorf("account %s answered 204 to its deletion but is still stored", d.account)
		}
	}
}

// checkBox checks entitlements.md's invariants on box's database, after
// box's consumer has applied every identity.account.deleted.
func checkBox(t *testing.T, c *cluster, rec *recorder, gateway string) {
	t.Helper()
	deletedEvents := column(t, c.identityDB, `SELECT id::text FROM outbox WHERE type = $1`, identity.EventAccountDeleted)
	testutil.Eventually(t, 30*time.Second, "box to apply every account deletion", func() bool {
		return count(t, c.boxDB, `SELECT count(*) FROM consumed_events WHERE consumer = $1`, accountdeleted.ConsumerName) >= len(deletedEvents)
	})
	sameSet(t, "events box applied", column(t, c.boxDB, `SELECT event_id::text FROM consumed_events WHERE consumer = $1`, accountdeleted.ConsumerName), deletedEvents)
	if n := count(t, c.boxDB, `SELECT count(*) FROM parked_events`); n != 0 {
		t.Errorf("box parked %d events", n)
	}

	for _, inv := range []invariant{
		{"at most one active entitlement per (account, product) (section 2)",
			`SELECT count(*) FROM (SELECT 1 FROM entitlements WHERE status = 'active'
				GROUP BY account_id, product HAVING count(*) > 1) d`},
		{"every entitlement has exactly one grant event, by its granter (section 2: in one transaction)",
			`SELECT count(*) FROM entitlements e WHERE (SELECT count(*) FROM entitlement_events v
				WHERE v.entitlement_id = e.id AND v.action = 'grant' AND v.actor_user_id = e.granted_by) <> 1`},
		{"a revoked entitlement has exactly one revoke event, by its revoker; an active one none (section 3)",
			`SELECT count(*) FROM entitlements e WHERE (SELECT count(*) FROM entitlement_events v
				WHERE v.entitlement_id = e.id AND v.action = 'revoke' AND v.actor_user_id = e.revoked_by)
				<> CASE WHEN e.status = 'revoked' THEN 1 ELSE 0 END
				OR (e.status = 'active' AND EXISTS (SELECT 1 FROM entitlement_events v WHERE v.entitlement_id = e.id AND v.action = 'revoke'))`},
		{"revoked_at and revoked_by are set exactly on revoked rows",
			`SELECT count(*) FROM entitlements WHERE (status = 'revoked') <> (revoked_at IS NOT NULL AND revoked_by IS NOT NULL)`},
		{"a capability is redeemed or voided, never both",
			`SELECT count(*) FROM capabilities WHERE redeemed_at IS NOT NULL AND voided_at IS NOT NULL`},
		{"a capability is bound to its entitlement's account and product",
			`SELECT count(*) FROM capabilities c JOIN entitlements e ON e.id = c.entitlement_id
				WHERE c.account_id <> e.account_id OR c.artifact <> e.product`},
		{"a capability was redeemed before it expired",
			`SELECT count(*) FROM capabilities WHERE redeemed_at IS NOT NULL AND redeemed_at >= expires_at`},
	} {
		if n := count(t, c.boxDB, inv.query); n != 0 {
			t.Errorf("box: %s: %d rows break it", inv.rule, n)
		}
	}

	if n := count(t, c.boxDB, `SELECT count(*) FROM entitlements`); n != rec.grants {
		t.Errorf("box holds %d entitlements, %d grants answered 201", n, rec.grants)
	}
	if n := count(t, c.boxDB, `SELECT count(*) FROM entitlements WHERE status = 'revoked'`); n != rec.revokes+len(rec.deletions) {
		t.Errorf("box holds %d revoked entitlements, want %d revoked by the operator and %d by account deletions", n, rec.revokes, len(rec.deletions))
	}
	if n := count(t, c.boxDB, `SELECT count(*) FROM capabilities`); n != rec.statuses["artifact fetch"][201] {
		t.Errorf("box holds %d capabilities, %d artifact fetches answered 201", n, rec.statuses["artifact fetch"][201])
	}
	// Single use: one 200 per redeemed row, however many redemptions raced.
	if n := count(t, c.boxDB, `SELECT count(*) FROM capabilities WHERE redeemed_at IS NOT NULL`); n != rec.redeemed {
		t.Errorf("box holds %d redeemed capabilities, %d redemptions answered 200", n, rec.redeemed)
	}
	if got := rec.statuses["redeem"][200]; got != rec.redeemed {
		t.Errorf("%d redemptions answered 200 for %d capabilities redeemed", got, rec.redeemed)
	}

	staff := rec.users[0]
	for _, id := range rec.revokedEnts {
		if n := count(t, c.boxDB, `SELECT count(*) FROM entitlements WHERE id = $1 AND status = 'revoked' AND revoked_by = $2`, id, staff); n != 1 {
			t.Errorf("entitlement %d answered revoked but is not revoked by the operator", id)
		}
	}
	// An account's deletion revoked its grant in the deleter's name and
	// voided the capability it left outstanding.
	for _, d := range rec.deletions {
		if n := count(t, c.boxDB, `SELECT count(*) FROM entitlements WHERE id = $1 AND status = 'revoked' AND revoked_by = $2`, d.entitlement, d.owner); n != 1 {
			t.Errorf("entitlement %d of deleted account %s is not revoked by its deleter", d.entitlement, d.account)
		}
		if n := count(t, c.boxDB, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'active'`, d.account); n != 0 {
			t.Errorf("deleted account %s keeps %d active entitlements", d.account, n)
		}
		if n := count(t, c.boxDB, `SELECT count(*) FROM capabilities WHERE account_id = $1 AND redeemed_at IS NULL AND voided_at IS NULL`, d.account); n != 0 {
			t.Errorf("deleted account %s keeps %d redeemable capabilities", d.account, n)
		}
		a, ok := rec.call("redeem after deletion", gateway, "POST", "/v1/capabilities/redeem", "", map[string]string{"token": d.outstandingCap}, 410)
		if !ok || a.errorCode() != "capability_expired" {
			t.Errorf("a capability of deleted account %s answered %d %s, want 410 capability_expired", d.account, a.status, a.errorCode())
		}
	}
}

// sameSet fails unless got and want hold the same strings, each once.
func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s: got %d, want %d: %s", what, len(got), len(want), diff(g, w))
	}
}

func diff(got, want []string) string {
	var extra, missing []string
	for _, s := range got {
		if _, ok := slices.BinarySearch(want, s); !ok {
			extra = append(extra, s)
		}
	}
	for _, s := range want {
		if _, ok := slices.BinarySearch(got, s); !ok {
			missing = append(missing, s)
		}
	}
	return fmt.Sprintf("unexpected %v, missing %v", head(extra), head(missing))
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
