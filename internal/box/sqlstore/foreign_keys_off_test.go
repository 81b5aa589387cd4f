package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestForeignKeyRulesHoldWithForeignKeysOff: every foreign key of box's
// schema refuses its violation on a SQLite connection that has foreign
// keys off, as the sqlite3 shell's connections do.
func TestForeignKeyRulesHoldWithForeignKeysOff(t *testing.T) {
	ctx := context.Background()
	db, s := open(t, sqldb.SQLite)
	raw := sqltest.RawSQLite(t, db)

	_, ent, err := s.Claim(ctx, account, staffID)
	if err != nil {
		t.Fatal(err)
	}
	if err := issue(t, s, "fk-off", box.ProductKit, time.Minute); err != nil {
		t.Fatal(err)
	}
	rel, err := s.CreateRelease(ctx, box.NewRelease{Product: box.ProductKit, Version: "1.0.0", PublishedBy: staffID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Approve(ctx, account, rel.ID, staffID, func(box.Release, *box.Entitlement) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A second entitlement with no claim and no capability: its grant
	// event alone keeps it.
	plain := grant(t, s, box.ProductPlatform, nil)

	const ts = `'2026-01-01 00:00:00+00:00'`
	tests := []struct {
		name  string
		query string
		args  []any
	}{
		{"DeleteEntitlementWithEventsClaimAndCapability", `DELETE FROM entitlements WHERE id = ?`, []any{ent.ID}},
		{"DeleteEntitlementWithEvents", `DELETE FROM entitlements WHERE id = ?`, []any{plain.ID}},
		{"DeleteEveryEntitlement", `DELETE FROM entitlements`, nil},
		{"EventForNoEntitlement", `INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
			VALUES (999, 'grant', 'x', ` + ts + `, ` + ts + `)`, nil},
		{"CapabilityForNoEntitlement", `INSERT INTO capabilities (selector, token_digest, entitlement_id, account_id, artifact, created_at, expires_at)
			VALUES ('00000000-0000-4000-8000-000000000001', 'd', 999, ?, 'kit', ` + ts + `, '2026-01-02 00:00:00+00:00')`, []any{account}},
		{"CapabilityMovedToNoEntitlement", `UPDATE capabilities SET entitlement_id = 999`, nil},
		{"ClaimForNoEntitlement", `INSERT INTO claims (account_id, product, claimed_by, entitlement_id, created_at)
			VALUES (?, 'kit', 'x', 999, ` + ts + `)`, []any{account}},
		{"ClaimMovedToNoEntitlement", `UPDATE claims SET entitlement_id = 999`, nil},
		{"DeleteReleaseWithApprovals", `DELETE FROM releases WHERE id = ?`, []any{rel.ID}},
		{"RenumberReleaseWithApprovals", `UPDATE releases SET id = 999 WHERE id = ?`, []any{rel.ID}},
		{"ApprovalOfNoRelease", `INSERT INTO approvals (account_id, release_id, approved_by, created_at)
			VALUES (?, 999, 'x', ` + ts + `)`, []any{account}},
		{"ApprovalMovedToNoRelease", `UPDATE approvals SET release_id = 999`, nil},
	}
	for _, tt := range tests {
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
	for table, want := range map[string]int{"entitlements": 2, "entitlement_events": 2, "capabilities": 1, "claims": 1, "releases": 1, "approvals": 1} {
		if got := count(t, db, `SELECT count(*) FROM `+table); got != want {
			t.Errorf("%s rows = %d, want %d", table, got, want)
		}
	}
	sqltest.WantNoDanglingReferences(t, raw)

	// A release nobody approved is still the operator's to delete.
	lone, err := s.CreateRelease(ctx, box.NewRelease{Product: box.ProductKit, Version: "2.0.0", PublishedBy: staffID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DELETE FROM releases WHERE id = ?`, lone.ID); err != nil {
		t.Errorf("delete an unapproved release: %v", err)
	}
}

// TestForeignKeysOffRace races a foreign-keys-off connection deleting the
// newest entitlement, and writing events for the next one, against grants
// and claims through the store: whatever the interleaving, no deletion of
// an entitlement succeeds (each has its grant event from the transaction
// that made it) and nothing names a missing row.
func TestForeignKeysOffRace(t *testing.T) {
	ctx := context.Background()
	db, s := open(t, sqldb.SQLite)
	raw := sqltest.RawSQLite(t, db)

	const grants = 60
	var (
		wg      sync.WaitGroup
		done    = make(chan struct{})
		deleted int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := raw.Exec(`DELETE FROM entitlements WHERE id = (SELECT max(id) FROM entitlements)`)
			if err == nil {
				n, _ := res.RowsAffected()
				deleted += n
			} else if !sqldb.IsForeignKeyViolation(err) {
				t.Errorf("raw delete: %v", err)
			}
			_, err = raw.Exec(`INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
				VALUES ((SELECT coalesce(max(id), 0) + 1 FROM entitlements), 'revoke', 'raw', '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')`)
			if err != nil && !sqldb.IsForeignKeyViolation(err) {
				t.Errorf("raw insert: %v", err)
			}
		}
	}()
	var racers sync.WaitGroup
	for i := range grants {
		racers.Add(1)
		go func() {
			defer racers.Done()
			acct := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			if i%2 == 0 {
				if _, _, err := s.Claim(ctx, acct, staffID); err != nil {
					t.Errorf("Claim: %v", err)
				}
				return
			}
			if _, _, err := s.Grant(ctx, box.NewEntitlement{AccountID: acct, Product: box.ProductPlatform, GrantedBy: staffID}); err != nil {
				t.Errorf("Grant: %v", err)
			}
		}()
	}
	racers.Wait()
	close(done)
	wg.Wait()

	if deleted != 0 {
		t.Errorf("%d entitlements deleted by a foreign-keys-off connection", deleted)
	}
	if got := count(t, db, `SELECT count(*) FROM entitlements`); got != grants {
		t.Errorf("entitlements = %d, want %d", got, grants)
	}
	sqltest.WantNoDanglingReferences(t, raw)
}
