package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/httpapi"
	"github.com/platformco/platform/internal/billing/stripemock"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// The figures of billing.md §8, as go benchmarks (make bench-go; one
// engine per sub-benchmark, PostgreSQL with TEST_DATABASE_URL). Each
// reports its rate as a custom metric; bench/README.md records them.

func engines(b *testing.B, fn func(b *testing.B, engine sqldb.Engine)) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) { fn(b, engine) })
	}
}

// BenchmarkWebhookIngest: signed checkout.session.completed events, each
// a new payment with its inbox item and outbox row, from 16 concurrent
// senders; every one is applied once.
func BenchmarkWebhookIngest(b *testing.B) {
	engines(b, func(b *testing.B, engine sqldb.Engine) {
		e := newEnv(b, engine)
		plan := e.seed()["Platform"]
		var n atomic.Int64
		b.SetParallelism(16 / max(1, runtimeProcs()))
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := strconv.FormatInt(n.Add(1), 10)
				if r := e.webhook(checkoutCompleted("evt_b"+i, "cs_b"+i, "pi_b"+i, team, plan, plan.Amount)); r.status != 200 {
					b.Errorf("webhook = %d %s", r.status, r.raw)
					return
				}
			}
		})
		b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "events/s")
		b.StopTimer()
		if got := e.count(`SELECT count(*) FROM payments`); got != int(n.Load()) {
			b.Errorf("payments = %d, want %d (one per event)", got, n.Load())
		}
	})
}

// BenchmarkPlansRead: the public GET /v1/plans at 32 clients.
func BenchmarkPlansRead(b *testing.B) {
	engines(b, func(b *testing.B, engine sqldb.Engine) {
		e := newEnv(b, engine)
		e.seed()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		b.SetParallelism(32 / max(1, runtimeProcs()))
		var n atomic.Int64
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := client.Get(e.srv.URL + "/v1/plans")
				if err != nil || resp.StatusCode != 200 {
					b.Errorf("plans: %v", err)
					return
				}
				_, _ = drain(resp)
				n.Add(1)
			}
		})
		b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "req/s")
	})
}

// BenchmarkCheckout: checkout creation at one client through billing to
// stripe-mock, against stripe-mock's own answer to the same session
// create; reports the p50 each and what billing adds.
func BenchmarkCheckout(b *testing.B) {
	url := stripemock.Start(b)
	engines(b, func(b *testing.B, engine sqldb.Engine) {
		e := newEnv(b, engine)
		proc := stripeproc.New(stripeproc.Options{SecretKey: "sk_test_123", APIURL: url})
		svc := billing.NewService(e.store, e.ident, proc, "http://web.example")
		e.mu.Lock()
		e.h = httpapi.NewServer(httpapi.Deps{Service: svc, Webhooks: billing.NewWebhooks(e.store), Logger: e.logger})
		e.mu.Unlock()
		plan, err := svc.CreatePlan(context.Background(), billing.Staff{}, billing.PlanInput{Name: ptr("Platform"),
			Products: &[]string{"platform"}, Amount: ptr("12000"), Currency: ptr("usd"), Interval: ptr("once")})
		if err != nil {
			b.Fatal(err)
		}
		cust, err := e.store.Customer(context.Background(), team)
		if err != nil {
			// The first checkout makes the customer.
			if r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`); r.status != 201 {
				b.Fatalf("checkout = %d %s", r.status, r.raw)
			}
			cust, _ = e.store.Customer(context.Background(), team)
		}
		var viaBilling, direct []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`); r.status != 201 {
				b.Fatalf("checkout = %d %s", r.status, r.raw)
			}
			viaBilling = append(viaBilling, time.Since(t0))
			t0 = time.Now()
			if _, err := proc.CreateCheckout(context.Background(), billing.CheckoutSpec{Mode: billing.ModePayment, CustomerID: cust.ProcessorCustomerID,
				PriceID: plan.ProcessorPriceID, AccountID: team, PlanID: plan.ID, UserID: ownerID,
				SuccessURL: "http://web.example/ok", CancelURL: "http://web.example/no"}); err != nil {
				b.Fatal(err)
			}
			direct = append(direct, time.Since(t0))
		}
		b.StopTimer()
		pb, pd := p50(viaBilling), p50(direct)
		b.ReportMetric(float64(pb.Microseconds())/1000, "billing-p50-ms")
		b.ReportMetric(float64(pd.Microseconds())/1000, "stripe-mock-p50-ms")
		b.ReportMetric(float64((pb-pd).Microseconds())/1000, "added-p50-ms")
	})
}

func ptr(s string) *string { return &s }
