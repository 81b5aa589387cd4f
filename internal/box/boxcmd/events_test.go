package boxcmd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func TestLoadConfigEventsURL(t *testing.T) {
	cfg, err := load(map[string]string{"EVENTS_URL": "nats://127.0.0.1:4222"})
	if err != nil || cfg.EventsURL != "nats://127.0.0.1:4222" {
		t.Errorf("load = %+v, %v", cfg, err)
	}
	_, err = load(map[string]string{"EVENTS_URL": "http://127.0.0.1:4222"})
	if err == nil || !strings.HasPrefix(err.Error(), "EVENTS_URL:") {
		t.Errorf("EVENTS_URL=http://…: error %v, want one naming the variable", err)
	}
}

// TestServeConsumesAccountDeletions: box serve with EVENTS_URL revokes a
// deleted account's entitlements when identity.account.deleted arrives.
func TestServeConsumesAccountDeletions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		url := sqltest.URL(t, engine)
		if err := boxcmd.Migrate(ctx, url); err != nil {
			t.Fatal(err)
		}
		db, err := sqldb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		const account, owner = "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f", "3f6c1a9e-2b4d-4e7f-8a1b-5c6d7e8f9012"
		if _, _, err := sqlstore.New(db).Grant(ctx, box.NewEntitlement{AccountID: account, Product: box.ProductPlatform, GrantedBy: owner}); err != nil {
			t.Fatal(err)
		}

		b := eventstest.Embedded(t)
		serve(t, boxcmd.Config{Base: service.Base{DatabaseURL: url}, EventsURL: b.URL, CapabilityTTL: time.Minute, IdentityTimeout: time.Second, MasterKey: make([]byte, 32)})

		_, js := eventstest.Connect(t, b)
		eventstest.EnsureStream(t, js, b)
		body, err := events.Envelope{SpecVersion: events.SpecVersion, ID: uuid.NewString(), Type: "identity.account.deleted",
			Source: "identity", Subject: account, Time: time.Now().UTC(),
			Data: []byte(`{"account_id":"` + account + `","deleted_by":"` + owner + `"}`)}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, b.Stream.Subject("identity.account.deleted"), body); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "the account's entitlement revoked", func() bool {
			var n int
			err := db.QueryRow(ctx, `SELECT count(*) FROM entitlements WHERE account_id = $1 AND status = 'revoked' AND revoked_by = $2`, account, owner).Scan(&n)
			return err == nil && n == 1
		})
	})
}
