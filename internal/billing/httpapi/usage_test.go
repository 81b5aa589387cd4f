package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const museToken = "muse:" + museSecret

func usageJSON(id, account, metric, quantity, start, end string) string {
	return `{"id":"` + id + `","account_id":"` + account + `","metric":"` + metric + `","quantity":` + quantity +
		`,"window_start":"` + start + `","window_end":"` + end + `"}`
}

func TestRecordUsage(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
		start, end := hour.Add(5*time.Minute).Format(time.RFC3339), hour.Add(10*time.Minute).Format(time.RFC3339)
		id := uuid.NewString()
		valid := usageJSON(id, team, "tokens", "1500", start, end)
		for _, tt := range []struct {
			name, token, body string
			status            int
			code, field       string
		}{
			{"no credential", "", valid, 401, "unauthenticated", ""},
			{"wrong secret", "muse:" + strings.Repeat("x", 40), valid, 401, "unauthenticated", ""},
			{"an identity token", ownerToken, valid, 401, "unauthenticated", ""},
			{"float quantity", museToken, strings.Replace(valid, "1500", "15.5", 1), 422, "validation_failed", "quantity"},
			{"negative quantity", museToken, strings.Replace(valid, "1500", "-1", 1), 422, "validation_failed", "quantity"},
			{"zero quantity", museToken, strings.Replace(valid, "1500", "0", 1), 422, "validation_failed", "quantity"},
			{"string quantity", museToken, strings.Replace(valid, "1500", `"1500"`, 1), 422, "validation_failed", "quantity"},
			{"bad metric", museToken, strings.Replace(valid, "tokens", "Tokens!", 1), 422, "validation_failed", "metric"},
			{"id not a uuid", museToken, strings.Replace(valid, id, "usage-1", 1), 422, "validation_failed", "id"},
			{"account not a uuid", museToken, strings.Replace(valid, team, "acct", 1), 422, "validation_failed", "account_id"},
			{"window backwards", museToken, usageJSON(id, team, "tokens", "1", end, start), 422, "validation_failed", "window_end"},
			{"window not a time", museToken, usageJSON(id, team, "tokens", "1", "yesterday", end), 422, "validation_failed", "window_start"},
			{"missing quantity", museToken, `{"id":"` + id + `","account_id":"` + team + `","metric":"tokens","window_start":"` + start + `","window_end":"` + end + `"}`, 422, "validation_failed", "quantity"},
			{"unknown field", museToken, strings.Replace(valid, `"metric"`, `"meter"`, 1), 400, "malformed_json", ""},
			{"recorded", museToken, valid, 201, "", ""},
			{"the same again", museToken, valid, 200, "", ""},
			{"the same id, other values", museToken, strings.Replace(valid, "1500", "1501", 1), 409, "conflict", ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do("POST", "/v1/usage", tt.token, tt.body)
				if r.status != tt.status || (tt.code != "" && r.body["code"] != tt.code) {
					t.Fatalf("status %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
				}
				if tt.field != "" && !strings.Contains(string(r.raw), `"field":"`+tt.field+`"`) {
					t.Errorf("body %s does not name %s", r.raw, tt.field)
				}
				if tt.status == 200 && r.header.Get("Idempotent-Replayed") != "true" {
					t.Error("a replay is not marked Idempotent-Replayed")
				}
			})
		}
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.usage.recorded'`); n != 1 {
			t.Errorf("usage.recorded rows = %d, want 1", n)
		}
		if strings.Contains(e.logs.String(), museSecret) {
			t.Error("the service secret was logged")
		}

		// Two more records: one in the same hour, one the next hour.
		for _, b := range []string{
			usageJSON(uuid.NewString(), team, "tokens", "500", hour.Add(50*time.Minute).Format(time.RFC3339), hour.Add(70*time.Minute).Format(time.RFC3339)),
			usageJSON(uuid.NewString(), team, "tokens", "7", hour.Add(61*time.Minute).Format(time.RFC3339), hour.Add(62*time.Minute).Format(time.RFC3339)),
			usageJSON(uuid.NewString(), team, "images", "3", start, end),
		} {
			if r := e.do("POST", "/v1/usage", museToken, b); r.status != 201 {
				t.Fatalf("record = %d %s", r.status, r.raw)
			}
		}
		r := e.do("GET", "/v1/accounts/"+team+"/usage?metric=tokens", memberToken, "")
		if r.status != 200 {
			t.Fatalf("usage = %d %s", r.status, r.raw)
		}
		hours, _ := r.body["usage"].([]any)
		want := []struct {
			hour     time.Time
			quantity float64
		}{{hour, 2000}, {hour.Add(time.Hour), 7}}
		if len(hours) != len(want) {
			t.Fatalf("hours = %v, want %d", hours, len(want))
		}
		for i, w := range want {
			h := hours[i].(map[string]any)
			if h["hour"] != w.hour.Format(time.RFC3339) || h["quantity"] != w.quantity || h["metric"] != "tokens" {
				t.Errorf("hour %d = %v, want %s %v", i, h, w.hour.Format(time.RFC3339), w.quantity)
			}
		}
		if r := e.do("GET", "/v1/accounts/"+team+"/usage", memberToken, ""); len(r.body["usage"].([]any)) != 3 {
			t.Errorf("every metric: %s", r.raw)
		}
		for _, tt := range []struct {
			name, path, token string
			status            int
		}{
			{"no token", "/v1/accounts/" + team + "/usage", "", 401},
			{"not a member", "/v1/accounts/" + personal + "/usage", memberToken, 404},
			{"bad from", "/v1/accounts/" + team + "/usage?from=monday", memberToken, 422},
			{"from after to", "/v1/accounts/" + team + "/usage?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", memberToken, 422},
			{"range too long", "/v1/accounts/" + team + "/usage?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", memberToken, 422},
			{"empty range", "/v1/accounts/" + team + "/usage?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z", memberToken, 200},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if r := e.do("GET", tt.path, tt.token, ""); r.status != tt.status {
					t.Errorf("status %d %s, want %d", r.status, r.raw, tt.status)
				}
			})
		}
	})
}

// TestRecordUsageRacesOnOneID: the same record sent concurrently is stored
// once, summed once and emitted once.
func TestRecordUsageRacesOnOneID(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		now := time.Now().UTC().Format(time.RFC3339)
		body := usageJSON(uuid.NewString(), team, "tokens", "9", now, now)
		const n = 20
		statuses := make(chan int, n)
		for range n {
			go func() { statuses <- e.do("POST", "/v1/usage", museToken, body).status }()
		}
		created := 0
		for range n {
			switch s := <-statuses; s {
			case 201:
				created++
			case 200:
			default:
				t.Errorf("status %d", s)
			}
		}
		if created != 1 {
			t.Errorf("created %d times, want 1", created)
		}
		if got := e.count(`SELECT coalesce(sum(quantity), 0) FROM usage_hourly`); got != 9 {
			t.Errorf("hourly sum = %d, want 9", got)
		}
		if got := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.usage.recorded'`); got != 1 {
			t.Errorf("usage.recorded rows = %d, want 1", got)
		}
	})
}

// TestMeteredUsageReachesTheProcessor: an account subscribed to a plan
// metering "tokens" owes the processor a meter event per record, keyed by
// the usage id; a replayed record owes nothing more, and another metric or
// another account owes nothing.
func TestMeteredUsageReachesTheProcessor(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		ctx := context.Background()
		if r := e.do("POST", "/v1/operator/plans", staffToken, `{"name":"Tokens","products":["platform"],"amount":2,"currency":"usd","interval":"once","meter":"tokens"}`); r.status != 422 ||
			!strings.Contains(string(r.raw), `"field":"meter"`) {
			t.Fatalf("a metered one-time plan = %d %s, want 422 meter", r.status, r.raw)
		}
		r := e.do("POST", "/v1/operator/plans", staffToken, `{"name":"Tokens","products":["platform"],"amount":2,"currency":"usd","interval":"month","meter":"tokens"}`)
		if r.status != 201 || r.body["plan"].(map[string]any)["meter"] != "tokens" {
			t.Fatalf("metered plan = %d %s", r.status, r.raw)
		}
		plans, err := e.store.Plans(ctx, true)
		if err != nil || len(plans) != 1 {
			t.Fatalf("plans = %v, %v", plans, err)
		}
		if r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plans[0].ID+`"}`); r.status != 201 {
			t.Fatalf("checkout = %d %s", r.status, r.raw)
		}
		if r := e.webhook(subscriptionEvent("evt_m1", "customer.subscription.created", time.Now().Unix(), "sub_m", "active", plans[0])); r.status != 200 {
			t.Fatalf("webhook = %d %s", r.status, r.raw)
		}
		cust, err := e.store.Customer(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		metered := uuid.NewString()
		for _, b := range []string{
			usageJSON(metered, team, "tokens", "1200", now, now),
			usageJSON(metered, team, "tokens", "1200", now, now), // a retry
			usageJSON(uuid.NewString(), team, "images", "4", now, now),
			usageJSON(uuid.NewString(), personal, "tokens", "5", now, now),
		} {
			if r := e.do("POST", "/v1/usage", museToken, b); r.status != 201 && r.status != 200 {
				t.Fatalf("record = %d %s", r.status, r.raw)
			}
		}
		sent, err := e.meters.Once(ctx)
		if err != nil || sent != 1 {
			t.Fatalf("relay sent %d, %v; want 1", sent, err)
		}
		if sent, err := e.meters.Once(ctx); err != nil || sent != 0 {
			t.Errorf("relay again sent %d, %v; want 0", sent, err)
		}
		got := e.proc.MeterEvents()
		if len(got) != 1 || got[0].Identifier != metered || got[0].EventName != "tokens" || got[0].Value != 1200 ||
			got[0].CustomerID != cust.ProcessorCustomerID {
			t.Errorf("meter events = %+v, want one for %s of 1200 tokens by %s", got, metered, cust.ProcessorCustomerID)
		}
		reports, err := e.store.MeterReports(ctx)
		if err != nil || len(reports) != 1 || !reports[metered] {
			t.Errorf("meter reports = %v, %v", reports, err)
		}
	})
}

// downProcessor is a processor that never answers.
type downProcessor struct{ billing.Processor }

func (downProcessor) ReportUsage(context.Context, billing.MeterEvent) error {
	return errs.New(billing.CodeUnavailable, "payment processor unavailable")
}

// TestMeterRelayRetriesLater: a report the processor did not take stays
// owed, with its attempt counted and the next one backed off, and is sent
// once the processor answers.
func TestMeterRelayRetriesLater(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		ctx := context.Background()
		r := e.do("POST", "/v1/operator/plans", staffToken, `{"name":"Tokens","products":["platform"],"amount":2,"currency":"usd","interval":"month","meter":"tokens"}`)
		if r.status != 201 {
			t.Fatalf("plan = %d %s", r.status, r.raw)
		}
		plans, _ := e.store.Plans(ctx, true)
		if r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plans[0].ID+`"}`); r.status != 201 {
			t.Fatalf("checkout = %d %s", r.status, r.raw)
		}
		if r := e.webhook(subscriptionEvent("evt_m2", "customer.subscription.created", time.Now().Unix(), "sub_m", "trialing", plans[0])); r.status != 200 {
			t.Fatalf("webhook = %d %s", r.status, r.raw)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		if r := e.do("POST", "/v1/usage", museToken, usageJSON(uuid.NewString(), team, "tokens", "3", now, now)); r.status != 201 {
			t.Fatalf("record = %d %s", r.status, r.raw)
		}
		if sent, err := billing.NewMeterRelay(e.store, downProcessor{}, e.logger).Once(ctx); err != nil || sent != 0 {
			t.Fatalf("relay with the processor down sent %d, %v", sent, err)
		}
		if got := e.count(`SELECT count(*) FROM meter_reports WHERE reported_at IS NULL AND attempts = 1 AND last_error <> ''`); got != 1 {
			t.Errorf("owed reports after a failure = %d, want 1", got)
		}
		if sent, _ := e.meters.Once(ctx); sent != 0 {
			t.Errorf("a backed-off report was sent at once")
		}
		if _, err := e.db.Exec(ctx, `UPDATE meter_reports SET next_attempt_at = $1`, time.Now().Add(-time.Second).UTC()); err != nil {
			t.Fatal(err)
		}
		if sent, err := e.meters.Once(ctx); err != nil || sent != 1 {
			t.Errorf("relay once due sent %d, %v; want 1", sent, err)
		}
	})
}
