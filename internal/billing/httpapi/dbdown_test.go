package httpapi_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// TestDatabaseDownAnswers503: with billing's database not answering, the
// webhook, usage, checkout and the plans read answer 503 (the processor
// retries a webhook on it), and nothing is half-stored: once the database
// is back, the same webhook is applied once.
func TestDatabaseDownAnswers503(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("TEST_DATABASE_URL not set: the database that goes down is a PostgreSQL server behind a proxy")
	}
	ctx := context.Background()
	direct := sqltest.URL(t, sqldb.Postgres)
	migrator, err := sqldb.Open(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, sqlstore.Migrations); err != nil {
		t.Fatal(err)
	}
	migrator.Close()
	proxy := sqltest.NewProxy(t, sqltest.Target(t, direct))
	db, err := sqldb.New(proxy.URL(t, direct), sqldb.Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := newEnvOn(t, db)
	plan := e.seed()["Platform"]
	body := checkoutCompleted("evt_down", "cs_down", "pi_down", team, plan, plan.Amount)
	now := time.Now().UTC().Format(time.RFC3339)

	proxy.Down.Store(true)
	proxy.Frozen.Store(true)
	for _, tt := range []struct {
		name string
		do   func() response
	}{
		{"webhook", func() response { return e.webhook(body) }},
		{"usage", func() response {
			return e.do("POST", "/v1/usage", museToken, usageJSON(uuid.NewString(), team, "tokens", "1", now, now))
		}},
		{"checkout", func() response {
			return e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`)
		}},
		{"plans", func() response { return e.do("GET", "/v1/plans", "", "") }},
	} {
		if r := tt.do(); r.status != 503 || r.body["code"] != "unavailable" {
			t.Errorf("%s with the database down = %d %s, want 503 unavailable", tt.name, r.status, r.raw)
		}
	}

	proxy.Frozen.Store(false)
	proxy.Down.Store(false)
	testutil.Eventually(t, 15*time.Second, "billing answers once the database is back", func() bool {
		return e.do("GET", "/v1/plans", "", "").status == 200
	})
	if r := e.webhook(body); r.status != 200 || r.body["duplicate"] != false {
		t.Fatalf("the retried webhook = %d %s, want applied", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM payments WHERE processor_payment_id = 'pi_down'`); n != 1 {
		t.Errorf("payments of the retried webhook = %d, want 1", n)
	}
}
