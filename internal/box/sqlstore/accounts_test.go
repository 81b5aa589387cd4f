package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const deleter = "3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"

// TestRevokeAccountRacingCapabilities issues capabilities for an account
// while its deletion is applied: whatever the interleaving, no capability
// of the account redeems afterwards, each of its entitlements has exactly
// one revoke event naming the deleting user, and applying the deletion
// again changes nothing.
func TestRevokeAccountRacingCapabilities(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		grant(t, s, box.ProductPlatform, nil)
		grant(t, s, box.ProductKit, nil)
		if _, _, err := s.Activate(ctx, newInstallation("deleted-host"), anyEntitlement); err != nil {
			t.Fatal(err)
		}

		const issuers = 40
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			issued  []string
			start   = make(chan struct{})
			deleted sqlstore.AccountDeletion
		)
		for i := range issuers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				digest := fmt.Sprintf("race-%d", i)
				err := issue(t, s, digest, box.ProductPlatform, time.Hour)
				switch {
				case err == nil:
					mu.Lock()
					issued = append(issued, digest)
					mu.Unlock()
				case errs.Code(err) != box.CodeEntitlementRequired:
					t.Errorf("issue: %v", err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := db.InTx(ctx, func(tx *sqldb.Tx) error {
				var err error
				deleted, err = s.RevokeAccount(ctx, tx, account, deleter)
				return err
			})
			if err != nil {
				t.Errorf("RevokeAccount: %v", err)
			}
		}()
		close(start)
		wg.Wait()

		if len(deleted.Revoked) != 2 {
			t.Errorf("revoked %d entitlements, want 2", len(deleted.Revoked))
		}
		for _, digest := range issued {
			if _, err := redeem(s, digest); errs.Code(err) != box.CodeCapabilityExpired {
				t.Errorf("redeem %s after the deletion: %v, want capability_expired", digest, err)
			}
		}
		if got := count(t, db, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'active'`, account); got != 0 {
			t.Errorf("active entitlements = %d, want 0", got)
		}
		if got := count(t, db, `SELECT count(*) FROM installations WHERE account_id = $1 AND status <> 'revoked'`, account); got != 0 {
			t.Errorf("installations not revoked with the account = %d, want 0", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE action = 'revoke' AND actor_user_id = $1`, deleter); got != 2 {
			t.Errorf("revoke events by the deleting user = %d, want 2", got)
		}

		var again sqlstore.AccountDeletion
		err := db.InTx(ctx, func(tx *sqldb.Tx) error {
			var err error
			again, err = s.RevokeAccount(ctx, tx, account, deleter)
			return err
		})
		// On PostgreSQL a capability whose insert read the entitlement
		// before the revocation committed is not voided by it, so a second
		// application may void it; it never redeemed either way (checked
		// above: redemption requires the entitlement to be active).
		if err != nil || len(again.Revoked) != 0 {
			t.Errorf("second RevokeAccount = %+v, %v; want no entitlement revoked again", again, err)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE action = 'revoke'`); got != 2 {
			t.Errorf("revoke events after a second application = %d, want 2", got)
		}
	})
}
