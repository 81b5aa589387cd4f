package sqlstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestGrantRevokeStorm races 120 goroutines that grant, and revoke what
// they find active, on one (account, product): whatever the interleaving,
// at most one row is active, every row has exactly one grant event, and
// every revoked row exactly one revoke event.
func TestGrantRevokeStorm(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		const n = 120
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, _, err := s.Grant(context.Background(), box.NewEntitlement{AccountID: account, Product: box.ProductPlatform, GrantedBy: staffID})
				if err != nil {
					t.Errorf("Grant: %v", err)
					return
				}
				if i%2 == 0 {
					if _, err := s.Revoke(context.Background(), e.ID, staffID); err != nil {
						t.Errorf("Revoke: %v", err)
					}
				}
			}()
		}
		wg.Wait()
		if got := count(t, db, `SELECT count(*) FROM entitlements WHERE status = 'active'`); got > 1 {
			t.Errorf("%d active rows for one (account, product)", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlements e WHERE (SELECT count(*) FROM entitlement_events v WHERE v.entitlement_id = e.id AND v.action = 'grant') <> 1`); got != 0 {
			t.Errorf("%d rows without exactly one grant event", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlements e WHERE status = 'revoked' AND (SELECT count(*) FROM entitlement_events v WHERE v.entitlement_id = e.id AND v.action = 'revoke') <> 1`); got != 0 {
			t.Errorf("%d revoked rows without exactly one revoke event", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlements WHERE status = 'active' AND id IN (SELECT entitlement_id FROM entitlement_events WHERE action = 'revoke')`); got != 0 {
			t.Errorf("%d active rows carry a revoke event", got)
		}
	})
}
