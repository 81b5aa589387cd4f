package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/semver"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const (
	account = "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f"
	staffID = "0b6a7d2e-1111-4c1e-9a53-1d2b3c4d5e6f"
)

func ptr[T any](v T) *T { return &v }

func open(t *testing.T, engine sqldb.Engine) (*sqldb.DB, *sqlstore.Store) {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	return db, sqlstore.New(db)
}

func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func grant(t *testing.T, s *sqlstore.Store, product string, rng *string) box.Entitlement {
	t.Helper()
	e, created, err := s.Grant(context.Background(), box.NewEntitlement{
		AccountID: account, Product: product, VersionRange: rng, GrantedBy: staffID,
	})
	if err != nil || !created {
		t.Fatalf("Grant(%s) = created %v, %v; want a new row", product, created, err)
	}
	return e
}

func TestMigrateIsIdempotent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, _ := open(t, engine)
		n, err := db.Migrate(context.Background(), sqlstore.Migrations)
		if err != nil || n != 0 {
			t.Fatalf("second migrate = %d, %v; want 0, nil", n, err)
		}
		pending, err := db.Pending(context.Background(), sqlstore.Migrations)
		if err != nil || pending {
			t.Errorf("Pending() = %v, %v; want false, nil", pending, err)
		}
	})
}

func TestGrantRevokeRegrant(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		fixed := time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)
		db.Now = func() time.Time { return fixed }

		first := grant(t, s, box.ProductPlatform, ptr("^1.0.0"))
		if first.Status != box.StatusActive || first.AccountID != account || *first.VersionRange != "^1.0.0" ||
			first.GrantedBy != staffID || !first.GrantedAt.Equal(fixed) || first.RevokedAt != nil || first.RevokedBy != nil {
			t.Fatalf("granted row = %+v", first)
		}

		dup, created, err := s.Grant(ctx, box.NewEntitlement{AccountID: account, Product: box.ProductPlatform, GrantedBy: "someone-else"})
		if err != nil || created || dup.ID != first.ID {
			t.Fatalf("duplicate grant = %+v, created %v, %v; want the first row, not created", dup, created, err)
		}

		revoked, err := s.Revoke(ctx, first.ID, staffID)
		if err != nil || revoked.Status != box.StatusRevoked || *revoked.RevokedBy != staffID || !revoked.RevokedAt.Equal(fixed) {
			t.Fatalf("Revoke = %+v, %v", revoked, err)
		}
		again, err := s.Revoke(ctx, first.ID, "another-staff")
		if err != nil || *again.RevokedBy != staffID {
			t.Fatalf("second Revoke = %+v, %v; want the row unchanged", again, err)
		}
		if _, err := s.Revoke(ctx, 999999, staffID); errs.Code(err) != box.CodeNotFound {
			t.Fatalf("Revoke(unknown) error = %v, want not_found", err)
		}

		second := grant(t, s, box.ProductPlatform, nil)
		if second.ID == first.ID {
			t.Fatalf("re-grant reused id %d", second.ID)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE action = 'grant'`); got != 2 {
			t.Errorf("grant events = %d, want 2", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE action = 'revoke'`); got != 1 {
			t.Errorf("revoke events = %d, want 1", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE entitlement_id = $1 AND actor_user_id = $2`, first.ID, staffID); got != 2 {
			t.Errorf("events of the first row by the staff member = %d, want 2", got)
		}
	})
}

// TestConcurrentGrants races many grants of one (account, product): the
// partial unique index lets exactly one through, and every other caller gets
// that row back without an error.
func TestConcurrentGrants(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		const n = 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, ids := 0, map[int64]bool{}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, c, err := s.Grant(context.Background(), box.NewEntitlement{AccountID: account, Product: box.ProductIdentity, GrantedBy: staffID})
				if err != nil {
					t.Errorf("Grant: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				ids[e.ID] = true
				if c {
					created++
				}
			}()
		}
		wg.Wait()
		if created != 1 || len(ids) != 1 {
			t.Errorf("created %d rows, saw %d ids; want 1 and 1", created, len(ids))
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events`); got != 1 {
			t.Errorf("events = %d, want 1", got)
		}
	})
}

// TestConcurrentRevokes races revokes of one row: one revoke event.
func TestConcurrentRevokes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db, s := open(t, engine)
		e := grant(t, s, box.ProductCourier, nil)
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := s.Revoke(context.Background(), e.ID, staffID); err != nil || got.Status != box.StatusRevoked {
					t.Errorf("Revoke = %+v, %v", got, err)
				}
			}()
		}
		wg.Wait()
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE action = 'revoke'`); got != 1 {
			t.Errorf("revoke events = %d, want 1", got)
		}
	})
}

// TestAuditTrailRefusesTampering checks that the database itself refuses
// to change or remove audit rows, to delete an entitlement that has them,
// and to bring a revoked entitlement back.
func TestAuditTrailRefusesTampering(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		e := grant(t, s, box.ProductPlatform, nil)
		if _, err := s.Revoke(ctx, e.ID, staffID); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name  string
			query string
			check func(error) bool
		}{
			{"update event actor", `UPDATE entitlement_events SET actor_user_id = 'forged'`, sqldb.IsRaised},
			{"update event action", `UPDATE entitlement_events SET action = 'grant' WHERE action = 'revoke'`, sqldb.IsRaised},
			{"delete event", `DELETE FROM entitlement_events`, sqldb.IsRaised},
			{"delete entitlement with events", `DELETE FROM entitlements`, isRestricted},
			{"reactivate revoked", `UPDATE entitlements SET status = 'active', revoked_at = NULL, revoked_by = NULL`, sqldb.IsRaised},
			{"event without actor", `INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
				VALUES (` + fmt.Sprint(e.ID) + `, 'grant', '', '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')`, nil},
			{"second grant event", `INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
				VALUES (` + fmt.Sprint(e.ID) + `, 'grant', 'x', '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')`, sqldb.IsUniqueViolation},
		}
		if engine == sqldb.Postgres {
			cases = append(cases, struct {
				name  string
				query string
				check func(error) bool
			}{"truncate events", `TRUNCATE entitlement_events`, sqldb.IsRaised})
		}
		for _, c := range cases {
			_, err := db.Exec(ctx, c.query)
			if err == nil {
				t.Errorf("%s: the database accepted it", c.name)
				continue
			}
			if c.check != nil && !c.check(err) {
				t.Errorf("%s: refused with an unexpected error: %v", c.name, err)
			}
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events`); got != 2 {
			t.Errorf("events = %d after tampering, want 2", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE actor_user_id = $1`, staffID); got != 2 {
			t.Errorf("events still attributed to the staff member = %d, want 2", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlements WHERE status = 'revoked'`); got != 1 {
			t.Errorf("revoked rows = %d, want 1", got)
		}
	})
}

// isRestricted recognises a refused delete of a referenced row on both
// engines (sqldb classifies SQLite's trigger-coded RESTRICT refusal).
func isRestricted(err error) bool { return sqldb.IsForeignKeyViolation(err) }

// selectorOf names a test capability's selector after its digest; the
// service mints real ones (box/capability.go).
func selectorOf(digest string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(digest)).String()
}

func issue(t *testing.T, s *sqlstore.Store, digest, product string, ttl time.Duration) error {
	t.Helper()
	_, err := s.IssueCapability(context.Background(), box.NewCapability{
		Selector: selectorOf(digest), Digest: digest, AccountID: account, Artifact: product, TTL: ttl,
	}, func(e *box.Entitlement) error { return box.Authorize(product, semver.Any(), e) })
	return err
}

func redeem(s *sqlstore.Store, digest string) (box.Redemption, error) {
	return s.RedeemCapability(context.Background(), selectorOf(digest), digest)
}

func TestCapabilities(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		if err := issue(t, s, "d0", box.ProductKit, time.Minute); errs.Code(err) != box.CodeEntitlementRequired {
			t.Fatalf("issue without entitlement: %v, want entitlement_required", err)
		}
		e := grant(t, s, box.ProductKit, nil)

		if err := issue(t, s, "d1", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RedeemCapability(ctx, selectorOf("d1"), "forged"); errs.Code(err) != box.CodeNotFound {
			t.Errorf("redeem with the selector and another digest: %v, want not_found", err)
		}
		red, err := redeem(s, "d1")
		if err != nil || red.AccountID != account || red.Artifact != box.ProductKit || red.VersionRange != nil {
			t.Fatalf("redeem = %+v, %v", red, err)
		}
		if _, err := redeem(s, "d1"); errs.Code(err) != box.CodeCapabilityUsed {
			t.Errorf("second redeem: %v, want capability_used", err)
		}
		if _, err := redeem(s, "nope"); errs.Code(err) != box.CodeNotFound {
			t.Errorf("unknown redeem: %v, want not_found", err)
		}

		// Expiry follows the clock the transactions read.
		if err := issue(t, s, "d2", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		db.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
		if _, err := redeem(s, "d2"); errs.Code(err) != box.CodeCapabilityExpired {
			t.Errorf("expired redeem: %v, want capability_expired", err)
		}
		db.Now = time.Now

		// Revoking voids what is outstanding, and a re-grant does not revive it.
		if err := issue(t, s, "d3", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Revoke(ctx, e.ID, staffID); err != nil {
			t.Fatal(err)
		}
		if got := count(t, db, `SELECT count(*) FROM capabilities WHERE token_digest = 'd3' AND redeemed_at IS NULL`); got != 1 {
			t.Errorf("revoke touched the capability row: outstanding = %d, want 1", got)
		}
		grant(t, s, box.ProductKit, nil)
		if _, err := redeem(s, "d3"); errs.Code(err) != box.CodeCapabilityExpired {
			t.Errorf("redeem after revoke: %v, want capability_expired", err)
		}
	})
}

// TestRedeemRechecksEntitlement shows the redeem statement itself refuses a
// capability whose entitlement is no longer active, even if the capability
// row itself was never changed by the revoke.
func TestRedeemRechecksEntitlement(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		e := grant(t, s, box.ProductKit, nil)
		if err := issue(t, s, "d", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `UPDATE entitlements SET status = 'revoked', revoked_by = 'x', revoked_at = $2 WHERE id = $1`,
			e.ID, sqldb.Timestamp(time.Now())); err != nil {
			t.Fatal(err)
		}
		if _, err := redeem(s, "d"); errs.Code(err) != box.CodeCapabilityExpired {
			t.Errorf("redeem: %v, want capability_expired", err)
		}
		if got := count(t, db, `SELECT count(*) FROM capabilities WHERE redeemed_at IS NOT NULL`); got != 0 {
			t.Errorf("redeemed = %d, want 0", got)
		}
	})
}

// TestIssueAfterRegrantUsesTheCurrentRow: the store remembers the row it
// last issued under, but a revoke and a new grant are never hidden by it:
// the next issue is authorized against, and stored under, the new row.
func TestIssueAfterRegrantUsesTheCurrentRow(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		first := grant(t, s, box.ProductKit, nil)
		if err := issue(t, s, "before", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Revoke(ctx, first.ID, staffID); err != nil {
			t.Fatal(err)
		}
		if err := issue(t, s, "between", box.ProductKit, time.Minute); errs.Code(err) != box.CodeEntitlementRequired {
			t.Fatalf("issue after revoke: %v, want entitlement_required", err)
		}
		second := grant(t, s, box.ProductKit, nil)
		var seen []int64
		_, err := s.IssueCapability(ctx, box.NewCapability{Selector: selectorOf("after"), Digest: "after", AccountID: account, Artifact: box.ProductKit, TTL: time.Minute},
			func(e *box.Entitlement) error {
				if e != nil {
					seen = append(seen, e.ID)
				}
				return box.Authorize(box.ProductKit, semver.Any(), e)
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != second.ID {
			t.Errorf("authorized against %v, want the new grant %d last", seen, second.ID)
		}
		if got := count(t, db, `SELECT count(*) FROM capabilities WHERE token_digest = 'after' AND entitlement_id = `+fmt.Sprint(second.ID)); got != 1 {
			t.Errorf("capability stored under the new grant: %d, want 1", got)
		}
	})
}

// TestIssueRacesRevoke issues capabilities from many goroutines while the
// entitlement is revoked: every issue either fails for want of an
// entitlement or stores its capability against the row it was authorized
// under, and none of those redeem once it is revoked, not even after a new
// grant for the same product.
func TestIssueRacesRevoke(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		first := grant(t, s, box.ProductKit, nil)
		const n = 100
		var wg sync.WaitGroup
		issued := make(chan string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				digest := fmt.Sprintf("race-%d", i)
				switch err := issue(t, s, digest, box.ProductKit, time.Minute); errs.Code(err) {
				case "":
					if err != nil {
						t.Errorf("issue: %v", err)
						return
					}
					issued <- digest
				case box.CodeEntitlementRequired:
				default:
					t.Errorf("issue: %v", err)
				}
			}()
			if i == n/2 {
				if _, err := s.Revoke(ctx, first.ID, staffID); err != nil {
					t.Fatal(err)
				}
			}
		}
		wg.Wait()
		second := grant(t, s, box.ProductKit, nil)
		close(issued)
		for digest := range issued {
			var entID int64
			if err := db.QueryRow(ctx, `SELECT entitlement_id FROM capabilities WHERE token_digest = $1`, digest).Scan(&entID); err != nil {
				t.Fatalf("%s: %v", digest, err)
			}
			_, err := redeem(s, digest)
			if entID != first.ID {
				t.Errorf("%s stored against entitlement %d, want %d (the only one active before the new grant)", digest, entID, first.ID)
			}
			if errs.Code(err) != box.CodeCapabilityExpired {
				t.Errorf("%s under the revoked grant redeemed after re-grant %d: %v", digest, second.ID, err)
			}
		}
	})
}

func TestConcurrentRedemptions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		_, s := open(t, engine)
		grant(t, s, box.ProductKit, nil)
		if err := issue(t, s, "race", box.ProductKit, time.Minute); err != nil {
			t.Fatal(err)
		}
		const n = 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, used := 0, 0
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := redeem(s, "race")
				mu.Lock()
				defer mu.Unlock()
				switch errs.Code(err) {
				case "":
					if err != nil {
						t.Errorf("redeem: %v", err)
						return
					}
					ok++
				case box.CodeCapabilityUsed:
					used++
				default:
					t.Errorf("redeem: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 || used != n-1 {
			t.Errorf("successes %d, used %d; want 1 and %d", ok, used, n-1)
		}
	})
}

func TestReleasesApprovalsClaimsTimeline(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		db, s := open(t, engine)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tick := 0
		db.Now = func() time.Time { tick++; return base.Add(time.Duration(tick) * time.Second) }

		var rels []box.Release
		for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
			r, err := s.CreateRelease(ctx, box.NewRelease{Product: box.ProductPlatform, Version: v, PublishedBy: staffID})
			if err != nil {
				t.Fatal(err)
			}
			rels = append(rels, r)
		}
		if _, err := s.CreateRelease(ctx, box.NewRelease{Product: box.ProductPlatform, Version: "1.0.0", PublishedBy: staffID}); errs.Code(err) != box.CodeConflict {
			t.Fatalf("duplicate release: %v, want conflict", err)
		}
		if _, err := s.CreateRelease(ctx, box.NewRelease{Product: box.ProductCourier, Version: "1.0.0", PublishedBy: staffID}); err != nil {
			t.Fatal(err)
		}
		// No entitlement: no release events, and approving is refused.
		if evs, err := s.Timeline(ctx, account, nil, 100); err != nil || len(evs) != 0 {
			t.Fatalf("timeline before grant = %+v, %v; want empty", evs, err)
		}
		authorize := func(r box.Release, e *box.Entitlement) error {
			rr, _ := semver.ParseRange(r.Version)
			return box.Authorize(r.Product, rr, e)
		}
		if _, _, err := s.Approve(ctx, account, rels[0].ID, "member-1", authorize); errs.Code(err) != box.CodeEntitlementRequired {
			t.Fatalf("approve without entitlement: %v", err)
		}
		grant(t, s, box.ProductPlatform, ptr("^1.0.0"))
		if _, _, err := s.Approve(ctx, account, rels[2].ID, "member-1", authorize); errs.Code(err) != box.CodeVersionNotGranted {
			t.Fatalf("approve 2.0.0 under ^1.0.0: %v", err)
		}
		if _, _, err := s.Approve(ctx, account, 424242, "member-1", authorize); errs.Code(err) != box.CodeUnprocessable {
			t.Fatalf("approve unknown release: %v", err)
		}
		a, created, err := s.Approve(ctx, account, rels[1].ID, "member-1", authorize)
		if err != nil || !created || a.Version != "1.1.0" || a.ApprovedBy != "member-1" {
			t.Fatalf("approve = %+v, %v, %v", a, created, err)
		}
		again, created, err := s.Approve(ctx, account, rels[1].ID, "member-2", authorize)
		if err != nil || created || again.ID != a.ID || again.ApprovedBy != "member-1" {
			t.Fatalf("approve again = %+v, %v, %v; want the first approval", again, created, err)
		}

		evs, err := s.Timeline(ctx, account, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, ev.Type+" "+ev.Product+"@"+ev.Version)
		}
		want := []string{
			"approval.created platform@1.1.0",
			"release.published platform@2.0.0",
			"release.published platform@1.1.0",
			"release.published platform@1.0.0",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("timeline = %q, want %q", got, want)
		}
		if evs[0].ApprovalID != a.ID || evs[0].ReleaseID != rels[1].ID || evs[0].ActorUserID != "member-1" || evs[0].ID != fmt.Sprintf("approval-%d", a.ID) {
			t.Errorf("approval item = %+v", evs[0])
		}
		if evs[1].ApprovalID != 0 || evs[1].ActorUserID != staffID || evs[1].OccurredAt.IsZero() {
			t.Errorf("release item = %+v", evs[1])
		}
		if evs, _ := s.Timeline(ctx, account, nil, 2); len(evs) != 2 {
			t.Errorf("timeline limit 2 gave %d items", len(evs))
		}
		// Paged two at a time from each page's last item, the timeline is
		// the same four items; an approval and its release share no key.
		var paged []string
		var after *box.TimelineKey
		for range 3 {
			page, err := s.Timeline(ctx, account, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range page {
				paged = append(paged, ev.Type+" "+ev.Product+"@"+ev.Version)
			}
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			after = &box.TimelineKey{OccurredAt: last.OccurredAt, ApprovalID: last.ApprovalID, ReleaseID: last.ReleaseID}
		}
		if fmt.Sprint(paged) != fmt.Sprint(want) {
			t.Errorf("timeline paged = %q, want %q", paged, want)
		}

		claim, ent, err := s.Claim(ctx, account, "member-1")
		if err != nil || claim == nil || ent.Product != box.ProductKit || *ent.Source != box.SourceClaim || ent.GrantedBy != "member-1" || claim.EntitlementID != ent.ID {
			t.Fatalf("claim = %+v, %+v, %v", claim, ent, err)
		}
		claim2, ent2, err := s.Claim(ctx, account, "member-2")
		if err != nil || claim2 != nil || ent2.ID != ent.ID {
			t.Fatalf("second claim = %+v, %+v, %v; want the existing row and no claim", claim2, ent2, err)
		}
		if got := count(t, db, `SELECT count(*) FROM claims`); got != 1 {
			t.Errorf("claims = %d, want 1", got)
		}
		if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE entitlement_id = $1`, ent.ID); got != 1 {
			t.Errorf("claim grant events = %d, want 1", got)
		}
	})
}

func TestListEntitlements(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		_, s := open(t, engine)
		a := grant(t, s, box.ProductKit, nil)
		b := grant(t, s, box.ProductPlatform, nil)
		if _, err := s.Revoke(ctx, a.ID, staffID); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Entitlements(ctx, box.EntitlementFilter{AccountID: account, Limit: 10})
		if err != nil || len(rows) != 2 || rows[0].ID != b.ID || rows[1].ID != a.ID {
			t.Fatalf("list = %+v, %v; want newest first", rows, err)
		}
		rows, _ = s.Entitlements(ctx, box.EntitlementFilter{Status: box.StatusRevoked, Limit: 10})
		if len(rows) != 1 || rows[0].ID != a.ID {
			t.Errorf("revoked filter = %+v", rows)
		}
		rows, _ = s.Entitlements(ctx, box.EntitlementFilter{Before: b.ID, Limit: 10})
		if len(rows) != 1 || rows[0].ID != a.ID {
			t.Errorf("before filter = %+v", rows)
		}
	})
}
