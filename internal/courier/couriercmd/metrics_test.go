package couriercmd

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/observe/observetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// A send through courier's handler counts in sends by outcome once the send
// loop hands it to the mail system, and its events in the outbox's publish
// counter once the publisher delivers them.
func TestCourierSendsAndOutboxPublishesAreCounted(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		broker := eventstest.Embedded(t)
		secret := strings.Repeat("s", 32)
		metricsAddr := observetest.FreeAddr(t)
		base := serve(t, map[string]string{"DATABASE_URL": migrated(t, engine), "EVENTS_URL": broker.URL,
			"COURIER_SERVICE_TOKENS": "identity:" + secret, "METRICS_ADDR": metricsAddr})
		req, _ := http.NewRequest("POST", base+"/v1/emails", strings.NewReader(
			`{"template":"invitation","to":"ann@example.com","data":{"link":"https://app.example.com/i/x","account_name":"Engines","inviter_email":"ada@example.com"}}`))
		req.Header.Set("Authorization", "Bearer identity:"+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /v1/emails = %d, want 202", res.StatusCode)
		}
		testutil.Eventually(t, 10*time.Second, "the send and its events counted", func() bool {
			fams := observetest.ScrapeAddr(t, metricsAddr)
			sends, events := fams["platform_courier_sends_total"], fams["platform_outbox_events_total"]
			return sends != nil && events != nil &&
				observetest.Value(sends, map[string]string{"outcome": "sent"}) == 1 &&
				observetest.Value(events, map[string]string{"outcome": "published"}) >= 1
		})
		fams := observetest.ScrapeAddr(t, metricsAddr)
		observetest.Want(t, fams, "platform_courier_sends_total", map[string]string{"outcome": "failed"}, 0)
		observetest.Want(t, fams, "platform_courier_sends_total", map[string]string{"outcome": "rejected"}, 0)
		if fams["platform_courier_webhook_deliveries_total"] == nil {
			t.Error("scrape has no platform_courier_webhook_deliveries_total")
		}
		for label := range observetest.LabelNames(fams["platform_courier_sends_total"]) {
			if label != "service" && label != "outcome" {
				t.Errorf("sends carry label %q; want only service and outcome", label)
			}
		}
	})
}
