//go:build e2e

package reliability

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/testutil"
)

// TestPostgresCrashUnderLoad: PostgreSQL crashes (immediate stop, so the
// restart replays the write-ahead log) while identity creates accounts and
// box grants entitlements. /readyz turns 503 then 200 by itself, /healthz
// stays 200, no service is restarted, and every 2xx answer is durable and
// whole: each account has its owner and its outbox row, each entitlement
// exactly one grant event.
func TestPostgresCrashUnderLoad(t *testing.T) {
	pg := startPostgres(t)
	s := newStack(t, pg, stackOptions{})
	op := s.staff(t, "operator@example.com")
	buyer := s.register(t, "buyer@example.com")
	run := uniq()

	accounts := startLoad(4, func(w, i int) (int, string, error) {
		status, body, err := send("POST", s.identity.URL+"/v1/accounts", buyer.token, map[string]any{"name": fmt.Sprintf("load %s %d %d", run, w, i)})
		id, _ := body["id"].(string)
		return status, id, err
	})
	grants := startLoad(4, func(w, i int) (int, string, error) {
		status, body, err := send("POST", s.box.URL+"/v1/operator/entitlements", op.token, map[string]any{"account_id": uuid.NewString(), "product": "kit"})
		ent, _ := body["entitlement"].(map[string]any)
		return status, jsonID(ent["id"]), err
	})
	defer accounts.stop()
	defer grants.stop()
	progress := func(l *loadRun) int { l.res.mu.Lock(); defer l.res.mu.Unlock(); return len(l.res.ids) }
	testutil.Eventually(t, 20*time.Second, "load before the crash", func() bool { return progress(accounts) >= 10 && progress(grants) >= 10 })

	pg.stop(t, "immediate")
	for _, svc := range []struct{ name, url string }{{"identity", s.identity.URL}, {"box", s.box.URL}} {
		testutil.Eventually(t, 15*time.Second, svc.name+" /readyz 503 with the database down", func() bool { return ready(svc.url) == 503 })
		if got := healthz(svc.url); got != 200 {
			t.Errorf("%s /healthz = %d with the database down, want 200", svc.name, got)
		}
	}
	pg.start(t)
	for _, svc := range []struct{ name, url string }{{"identity", s.identity.URL}, {"box", s.box.URL}} {
		testutil.Eventually(t, 30*time.Second, svc.name+" /readyz 200 after the database returns", func() bool { return ready(svc.url) == 200 })
	}
	// The test's own pools held connections the crash killed (it reads
	// mail tokens through them): inspect through fresh ones.
	s.identityDB = openDB(t, s.identityEnv["DATABASE_URL"])
	s.boxDB = openDB(t, s.boxEnv["DATABASE_URL"])
	a0, g0 := progress(accounts), progress(grants)
	testutil.Eventually(t, 30*time.Second, "writes to succeed again without a restart", func() bool {
		return progress(accounts) >= a0+10 && progress(grants) >= g0+10
	})
	accRes, grantRes := accounts.stop(), grants.stop()
	if s.identity.Exited() || s.box.Exited() {
		t.Fatal("a service exited during the database outage")
	}
	t.Logf("accounts: %v (%d transport errors); grants: %v (%d transport errors)", accRes.statuses, accRes.errors, grantRes.statuses, grantRes.errors)
	// A database outage is a dependency outage: 503, never a 500.
	if accRes.statuses[500] > 0 || grantRes.statuses[500] > 0 {
		t.Errorf("answered 500 during the outage: accounts %v, grants %v; want 503", accRes.statuses, grantRes.statuses)
	}

	for _, id := range accRes.ids {
		if n := count(t, s.identityDB, `SELECT count(*) FROM accounts WHERE id = $1`, id); n != 1 {
			t.Errorf("account %s answered 201 but is not stored", id)
			continue
		}
		if n := count(t, s.identityDB, `SELECT count(*) FROM memberships WHERE account_id = $1 AND user_id = $2 AND role = 'owner'`, id, buyer.id); n != 1 {
			t.Errorf("account %s has no owner membership: half-written", id)
		}
		if n := count(t, s.identityDB, `SELECT count(*) FROM outbox WHERE subject = $1 AND type = 'identity.account.created'`, id); n != 1 {
			t.Errorf("account %s has %d account.created outbox rows, want 1", id, n)
		}
	}
	for _, id := range grantRes.ids {
		if n := count(t, s.boxDB, `SELECT count(*) FROM entitlements WHERE id = $1 AND status = 'active'`, id); n != 1 {
			t.Errorf("entitlement %s answered 201 but is not stored", id)
			continue
		}
		if n := count(t, s.boxDB, `SELECT count(*) FROM entitlement_events WHERE entitlement_id = $1 AND action = 'grant'`, id); n != 1 {
			t.Errorf("entitlement %s has %d grant events, want 1", id, n)
		}
	}
	// Nothing half-written by the requests that failed either.
	if n := count(t, s.identityDB, `SELECT count(*) FROM accounts a WHERE NOT personal AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = a.id AND m.role = 'owner')`); n != 0 {
		t.Errorf("%d accounts without an owner", n)
	}
	if n := count(t, s.boxDB, `SELECT count(*) FROM entitlements e WHERE NOT EXISTS (SELECT 1 FROM entitlement_events v WHERE v.entitlement_id = e.id AND v.action = 'grant')`); n != 0 {
		t.Errorf("%d entitlements without their grant event", n)
	}
}
