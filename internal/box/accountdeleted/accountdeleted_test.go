package accountdeleted_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/accountdeleted"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/semver"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

const (
	deleted  = "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f"
	kept     = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	legacy   = "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"
	owner    = "3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"
	staffID  = "0b6a7d2e-1111-4c1e-9a53-1d2b3c4d5e6f"
	deadline = 20 * time.Second
)

func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func grant(t *testing.T, s *sqlstore.Store, accountID, product string) box.Entitlement {
	t.Helper()
	e, created, err := s.Grant(context.Background(), box.NewEntitlement{AccountID: accountID, Product: product, GrantedBy: staffID})
	if err != nil || !created {
		t.Fatalf("Grant(%s, %s) = created %v, %v", accountID, product, created, err)
	}
	return e
}

// capability issues a capability for the account's product and returns
// its selector and digest.
func capability(t *testing.T, s *sqlstore.Store, accountID, product string) (string, string) {
	t.Helper()
	selector, digest := uuid.NewString(), uuid.NewString()
	_, err := s.IssueCapability(context.Background(), box.NewCapability{
		Selector: selector, Digest: digest, AccountID: accountID, Artifact: product, TTL: time.Hour,
	}, func(e *box.Entitlement) error { return box.Authorize(product, semver.Any(), e) })
	if err != nil {
		t.Fatalf("issue capability: %v", err)
	}
	return selector, digest
}

func publish(t *testing.T, js jetstream.JetStream, b *eventstest.Broker, e events.Envelope) {
	t.Helper()
	body, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// A fresh message id each time: the broker's duplicate window would
	// otherwise drop a second copy before the consumer could see it.
	if _, err := js.Publish(context.Background(), b.Stream.Subject(e.Type), body, jetstream.WithMsgID(uuid.NewString())); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func deletion(accountID, data string) events.Envelope {
	return events.Envelope{SpecVersion: events.SpecVersion, ID: uuid.NewString(), Type: accountdeleted.Type,
		Source: "identity", Subject: accountID, Time: time.Now().UTC(), Data: []byte(data)}
}

// TestAccountDeletedRevokesAndVoids publishes identity.account.deleted to a
// real JetStream broker, twice for the same envelope, and checks box's
// consumer: the account's active entitlements are revoked with one audit
// row each naming the deleting user (one, however often the event comes),
// its capabilities no longer redeem, another account is untouched, an
// event from before deleted_by existed is applied with identity as the
// actor, and an event whose data contradicts its subject is parked.
func TestAccountDeletedRevokesAndVoids(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		eventstest.Each(t, func(t *testing.T, b *eventstest.Broker) {
			ctx := context.Background()
			db := sqltest.Open(t, engine, sqlstore.Migrations)
			if _, err := consumer.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			store := sqlstore.New(db)

			platform := grant(t, store, deleted, box.ProductPlatform)
			_, kit, err := store.Claim(ctx, deleted, owner)
			if err != nil {
				t.Fatal(err)
			}
			selector, digest := capability(t, store, deleted, box.ProductPlatform)
			usedSel, usedDigest := capability(t, store, deleted, box.ProductKit)
			if _, err := store.RedeemCapability(ctx, usedSel, usedDigest); err != nil {
				t.Fatal(err)
			}
			other := grant(t, store, kept, box.ProductPlatform)
			otherSel, otherDigest := capability(t, store, kept, box.ProductPlatform)
			grant(t, store, legacy, box.ProductCourier)

			stop, err := accountdeleted.Start(ctx, db, store, accountdeleted.Config{
				EventsURL: b.URL, Stream: b.Stream, Backoff: []time.Duration{50 * time.Millisecond},
			}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)

			_, js := eventstest.Connect(t, b)
			eventstest.EnsureStream(t, js, b)
			ev := deletion(deleted, `{"account_id":"`+deleted+`","deleted_by":"`+owner+`"}`)
			publish(t, js, b, ev)
			publish(t, js, b, ev) // the same event again: applied once
			publish(t, js, b, deletion(kept, `{"account_id":"`+deleted+`","deleted_by":"`+owner+`"}`))
			// Last, so once it is applied everything before it was handled.
			publish(t, js, b, deletion(legacy, `{"account_id":"`+legacy+`"}`))

			testutil.Eventually(t, deadline, "the last event applied", func() bool {
				return count(t, db, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'active'`, legacy) == 0
			})

			if got := count(t, db, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'active'`, deleted); got != 0 {
				t.Errorf("active entitlements of the deleted account = %d, want 0", got)
			}
			for _, e := range []box.Entitlement{platform, kit} {
				if got := count(t, db, `SELECT count(*) FROM entitlements WHERE id = $1 AND revoked_by = $2`, e.ID, owner); got != 1 {
					t.Errorf("entitlement %d revoked by the deleting user: %d rows, want 1", e.ID, got)
				}
				if got := count(t, db, `SELECT count(*) FROM entitlement_events WHERE entitlement_id = $1 AND action = 'revoke' AND actor_user_id = $2`, e.ID, owner); got != 1 {
					t.Errorf("revoke audit rows of entitlement %d = %d, want 1", e.ID, got)
				}
			}
			if got := count(t, db, `SELECT count(*) FROM consumed_events WHERE event_id = $1`, ev.ID); got != 1 {
				t.Errorf("consumed_events rows of the event = %d, want 1", got)
			}
			if _, err := store.RedeemCapability(ctx, selector, digest); errs.Code(err) != box.CodeCapabilityExpired {
				t.Errorf("redeem a capability issued before the deletion: %v, want capability_expired", err)
			}
			if got := count(t, db, `SELECT count(*) FROM capabilities WHERE selector = $1 AND voided_at IS NOT NULL`, selector); got != 1 {
				t.Errorf("the outstanding capability is not voided")
			}
			if got := count(t, db, `SELECT count(*) FROM capabilities WHERE selector = $1 AND voided_at IS NULL AND redeemed_at IS NOT NULL`, usedSel); got != 1 {
				t.Errorf("the redeemed capability changed")
			}

			if got := count(t, db, `SELECT count(*) FROM entitlements WHERE id = $1 AND status = 'active'`, other.ID); got != 1 {
				t.Errorf("another account's entitlement was revoked")
			}
			if _, err := store.RedeemCapability(ctx, otherSel, otherDigest); err != nil {
				t.Errorf("another account's capability: %v, want it redeemed", err)
			}
			if got := count(t, db, `SELECT count(*) FROM parked_events WHERE consumer = $1`, accountdeleted.ConsumerName); got != 1 {
				t.Errorf("parked events = %d, want 1 (the one whose data names another account)", got)
			}

			if got := count(t, db, `SELECT count(*) FROM entitlement_events v JOIN entitlements e ON e.id = v.entitlement_id
				WHERE e.account_id = $1 AND v.action = 'revoke' AND v.actor_user_id = 'identity'`, legacy); got != 1 {
				t.Errorf("revoke audit rows by identity for an event without deleted_by = %d, want 1", got)
			}
		})
	})
}

// TestStartRefusesUnmigratedDatabase: without the consumer's tables the
// consumer does not start, and says which command creates them.
func TestStartRefusesUnmigratedDatabase(t *testing.T) {
	db := sqltest.Open(t, sqldb.SQLite, sqlstore.Migrations)
	_, err := accountdeleted.Start(context.Background(), db, sqlstore.New(db), accountdeleted.Config{EventsURL: "nats://127.0.0.1:1"},
		slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("Start on a database without consumer tables succeeded")
	}
	if want := "platform box migrate"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}

// TestStartWaitsForTheBroker: a broker that is down when box starts does
// not stop it; once the broker is back, a deletion published there is
// applied.
func TestStartWaitsForTheBroker(t *testing.T) {
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.SQLite, sqlstore.Migrations)
	if _, err := consumer.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	store := sqlstore.New(db)
	grant(t, store, deleted, box.ProductPlatform)

	b := eventstest.Embedded(t)
	b.Server.Shutdown()
	stop, err := accountdeleted.Start(ctx, db, store, accountdeleted.Config{EventsURL: b.URL, Stream: b.Stream},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Start with the broker down: %v", err)
	}
	t.Cleanup(stop)

	b.Restart(t)
	_, js := eventstest.Connect(t, b)
	eventstest.EnsureStream(t, js, b)
	publish(t, js, b, deletion(deleted, `{"account_id":"`+deleted+`","deleted_by":"`+owner+`"}`))
	testutil.Eventually(t, deadline, "the deletion applied after the broker came back", func() bool {
		return count(t, db, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'revoked'`, deleted) == 1
	})
}
