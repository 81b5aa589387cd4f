package httpapi_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestBillingEventsMeetTheContract drives every flow that emits, reads the
// outbox as the publisher builds envelopes from it, and validates each
// envelope and payload against schemas/events/billing. Every type billing
// declares must be seen.
func TestBillingEventsMeetTheContract(t *testing.T) {
	dir, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := events.LoadContract(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]                                                                            // plan.created ×4
		if r := e.do("PATCH", "/v1/operator/plans/"+plan.ID, staffToken, `{"amount":13000}`); r.status != 200 { // plan.updated
			t.Fatalf("PATCH = %d %s", r.status, r.raw)
		}
		plan.Amount = 13000
		if r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`); r.status != 201 { // customer.created
			t.Fatalf("checkout = %d %s", r.status, r.raw)
		}
		now := time.Now().Unix()
		for _, body := range [][]byte{
			checkoutCompleted("evt_c1", "cs_c1", "pi_c1", team, plan, plan.Amount), // payment.succeeded (checkout)
			stripeEvent("evt_c2", "charge.refunded", now, map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_c1",
				"amount": plan.Amount, "amount_refunded": 100, "currency": "usd"}), // payment.refunded
			stripeEvent("evt_c3", "payment_intent.payment_failed", now, map[string]any{"id": "pi_c3", "object": "payment_intent",
				"amount": 500, "currency": "usd", "metadata": map[string]any{"account_id": team}}), // payment.failed
			subscriptionEvent("evt_c4", "customer.subscription.created", now, "sub_c", "active", plan),     // subscription.started
			subscriptionEvent("evt_c5", "customer.subscription.updated", now+1, "sub_c", "past_due", plan), // subscription.past_due
			subscriptionEvent("evt_c6", "customer.subscription.updated", now+2, "sub_c", "active", plan),   // subscription.started again
			stripeEvent("evt_c7", "customer.subscription.updated", now+3, map[string]any{"id": "sub_c", "object": "subscription",
				"customer": "cus_2", "status": "active", "metadata": map[string]any{"account_id": team, "plan_id": plan.ID},
				"items": map[string]any{"object": "list", "data": []any{map[string]any{"id": "si_1", "object": "subscription_item",
					"price": map[string]any{"id": plan.ProcessorPriceID}, "current_period_end": now + 99}}}}), // subscription.updated
			subscriptionEvent("evt_c8", "customer.subscription.deleted", now+4, "sub_c", "canceled", plan), // subscription.canceled
			stripeEvent("evt_c9", "invoice.finalized", now, map[string]any{"id": "in_c", "object": "invoice", "status": "open",
				"amount_due": 700, "currency": "usd", "parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{
					"subscription": "sub_c", "metadata": map[string]any{"account_id": team, "plan_id": plan.ID}}}}), // invoice.created
			stripeEvent("evt_c10", "invoice.paid", now, map[string]any{"id": "in_c", "object": "invoice", "status": "paid",
				"amount_due": 700, "amount_paid": 700, "currency": "usd", "parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{
					"subscription": "sub_c", "metadata": map[string]any{"account_id": team, "plan_id": plan.ID}}}}), // payment.succeeded (invoice)
		} {
			if r := e.webhook(body); r.status != 200 {
				t.Fatalf("webhook = %d %s", r.status, r.raw)
			}
		}
		at := time.Now().UTC().Format(time.RFC3339)
		if r := e.do("POST", "/v1/usage", museToken, usageJSON("0190f3a2-9300-7b1a-9d2e-3f4a5b6c7d8e", team, "tokens", "12", at, at)); r.status != 201 { // usage.recorded
			t.Fatalf("usage = %d %s", r.status, r.raw)
		}
		rows, err := outbox.List(context.Background(), e.db, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, row := range rows {
			if err := contract.Validate(row.Envelope); err != nil {
				t.Errorf("%s: %v", row.Envelope.Type, err)
			}
			if row.Envelope.Source != "billing" {
				t.Errorf("%s: source %q", row.Envelope.Type, row.Envelope.Source)
			}
			seen[row.Envelope.Type] = true
		}
		for _, typ := range billing.EventTypes() {
			if !seen[typ] {
				t.Errorf("%s was never emitted", typ)
			}
		}
		if !slices.Contains(billing.EventTypes(), billing.TypePaymentSucceeded) {
			t.Error("EventTypes lacks payment.succeeded")
		}
	})
}
