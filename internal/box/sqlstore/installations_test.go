package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func grantLimited(t *testing.T, s interface {
	Grant(context.Context, box.NewEntitlement) (box.Entitlement, bool, error)
}, limit int) box.Entitlement {
	t.Helper()
	e, created, err := s.Grant(context.Background(), box.NewEntitlement{AccountID: account, Product: box.ProductPlatform, GrantedBy: staffID, MaxInstallations: &limit})
	if err != nil || !created || e.MaxInstallations == nil || *e.MaxInstallations != limit {
		t.Fatalf("Grant = %+v, %v, %v; want a row limited to %d", e, created, err, limit)
	}
	return e
}

func anyEntitlement(e *box.Entitlement) error {
	if e == nil {
		return errs.New(box.CodeEntitlementRequired, "none")
	}
	return nil
}

func newInstallation(fingerprint string) box.NewInstallation {
	return box.NewInstallation{ID: ids.New(), AccountID: account, Product: box.ProductPlatform, Fingerprint: fingerprint, Name: "node " + fingerprint, TTL: time.Hour}
}

// TestInstallationLimitRace races 30 activations of distinct fingerprints
// against a limit of 5: exactly 5 are active, every other one is refused
// installation_limit, whatever the interleaving.
func TestInstallationLimitRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		grantLimited(t, s, 5)
		const n = 30
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, _, results[i] = s.Activate(context.Background(), newInstallation(fmt.Sprintf("fp-%02d", i)), anyEntitlement)
			})
		}
		wg.Wait()
		ok, limited := 0, 0
		for _, err := range results {
			switch {
			case err == nil:
				ok++
			case errs.Code(err) == box.CodeInstallationLimit:
				limited++
			default:
				t.Errorf("Activate: %v", err)
			}
		}
		if ok != 5 || limited != n-5 {
			t.Errorf("%d activated, %d refused; want 5 and %d", ok, limited, n-5)
		}
		if got := count(t, db, `SELECT count(*) FROM installations WHERE status = 'active'`); got != 5 {
			t.Errorf("%d active rows, want 5", got)
		}
	})
}

// TestInstallationLifecycle: the same fingerprint is the same
// installation; a lapsed one frees its place and needs one to count again;
// deactivating frees a place; revoking the entitlement revokes its
// installations in the revoke's transaction.
func TestInstallationLifecycle(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		now := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
		db.Now = func() time.Time { return now }
		ent := grantLimited(t, s, 1)

		first, created, err := s.Activate(ctx, newInstallation("a"), anyEntitlement)
		if err != nil || !created || first.Status != box.InstallationActive || first.EntitlementID != ent.ID {
			t.Fatalf("Activate(a) = %+v, %v, %v", first, created, err)
		}
		now = now.Add(time.Minute)
		v := "1.2.3"
		again, created, err := s.Activate(ctx, box.NewInstallation{ID: ids.New(), AccountID: account, Product: box.ProductPlatform, Fingerprint: "a", Name: "other", Version: &v, TTL: time.Hour}, anyEntitlement)
		if err != nil || created || again.ID != first.ID || !again.LastSeenAt.Equal(now) || again.Version == nil || *again.Version != v {
			t.Fatalf("Activate(a) again = %+v, %v, %v; want the first, seen now at 1.2.3", again, created, err)
		}
		if _, _, err := s.Activate(ctx, newInstallation("b"), anyEntitlement); errs.Code(err) != box.CodeInstallationLimit {
			t.Fatalf("Activate(b) over the limit: %v, want installation_limit", err)
		}

		// a lapses: b takes its place, and a's heartbeat finds none.
		now = now.Add(2 * time.Hour)
		if got, err := s.Installation(ctx, first.ID); err != nil || got.Status != box.InstallationInactive {
			t.Fatalf("lapsed a = %+v, %v; want inactive", got, err)
		}
		b, _, err := s.Activate(ctx, newInstallation("b"), anyEntitlement)
		if err != nil {
			t.Fatalf("Activate(b) after a lapsed: %v", err)
		}
		if _, err := s.Heartbeat(ctx, first.ID, nil, time.Hour); errs.Code(err) != box.CodeInstallationLimit {
			t.Fatalf("heartbeat of lapsed a while b counts: %v, want installation_limit", err)
		}
		if got, err := s.Deactivate(ctx, b.ID); err != nil || got.Status != box.InstallationDeactivated || got.EndedAt == nil {
			t.Fatalf("Deactivate(b) = %+v, %v", got, err)
		}
		if got, err := s.Deactivate(ctx, b.ID); err != nil || got.Status != box.InstallationDeactivated {
			t.Fatalf("Deactivate(b) again = %+v, %v; want it unchanged", got, err)
		}
		if _, err := s.Heartbeat(ctx, b.ID, nil, time.Hour); errs.Code(err) != box.CodeInstallationEnded {
			t.Fatalf("heartbeat of deactivated b: %v, want installation_ended", err)
		}
		if got, err := s.Heartbeat(ctx, first.ID, nil, time.Hour); err != nil || got.Status != box.InstallationActive {
			t.Fatalf("heartbeat of a once b ended = %+v, %v", got, err)
		}

		if _, err := s.Revoke(ctx, ent.ID, staffID); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Installation(ctx, first.ID); err != nil || got.Status != box.InstallationRevoked {
			t.Fatalf("a after the revoke = %+v, %v; want revoked", got, err)
		}
		if _, err := s.Heartbeat(ctx, first.ID, nil, time.Hour); errs.Code(err) != box.CodeInstallationEnded {
			t.Fatalf("heartbeat of revoked a: %v, want installation_ended", err)
		}
		if _, err := s.Heartbeat(ctx, ids.New(), nil, time.Hour); errs.Code(err) != box.CodeNotFound {
			t.Fatalf("heartbeat of an unknown id: %v, want not_found", err)
		}
		list, err := s.Installations(ctx, box.InstallationFilter{AccountID: account, Limit: 10})
		if err != nil || len(list) != 2 || list[0].ID != b.ID {
			t.Fatalf("Installations = %+v, %v; want b then a", list, err)
		}
	})
}

// TestInstallationRulesInTheDatabase: the schema refuses what no store
// method writes: an installation under a revoked entitlement, a
// fingerprint with control characters, an ended installation revived.
func TestInstallationRulesInTheDatabase(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		ent := grantLimited(t, s, 3)
		inst, _, err := s.Activate(ctx, newInstallation("x"), anyEntitlement)
		if err != nil {
			t.Fatal(err)
		}
		now := sqldb.Timestamp(time.Now())
		insert := func(fp string) error {
			_, err := db.Exec(ctx, `INSERT INTO installations (id, account_id, entitlement_id, product, fingerprint, name, status, last_seen_at, lapses_at, created_at)
				VALUES ($1, $2, $3, 'platform', $4, 'n', 'active', $5, $6, $5)`, ids.New(), account, ent.ID, fp, now, now.Add(time.Hour))
			return err
		}
		if err := insert("tab\there"); err == nil {
			t.Error("a fingerprint with a control character was stored")
		}
		if _, err := s.Deactivate(ctx, inst.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `UPDATE installations SET status = 'active', ended_at = NULL WHERE id = $1`, inst.ID); err == nil {
			t.Error("an ended installation was revived")
		}
		if _, err := s.Revoke(ctx, ent.ID, staffID); err != nil {
			t.Fatal(err)
		}
		if err := insert("y"); err == nil {
			t.Error("an installation was stored under a revoked entitlement")
		}
	})
}
