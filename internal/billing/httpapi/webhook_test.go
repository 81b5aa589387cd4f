package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// checkoutCompleted is Stripe's checkout.session.completed for a paid
// one-time session of plan for account.
func checkoutCompleted(evID, sessionID, paymentID, account string, plan billing.Plan, amount int64) []byte {
	return stripeEvent(evID, "checkout.session.completed", time.Now().Unix(), map[string]any{
		"id": sessionID, "object": "checkout.session", "mode": "payment", "status": "complete", "payment_status": "paid",
		"client_reference_id": account, "customer": "cus_1", "payment_intent": paymentID,
		"customer_details": map[string]any{"email": "buyer@example.com"}, "amount_total": amount, "currency": plan.Currency,
		"metadata": map[string]any{"account_id": account, "plan_id": plan.ID, "user_id": ownerID},
	})
}

func TestWebhookSignature(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		body := checkoutCompleted("evt_sig", "cs_1", "pi_1", team, plan, plan.Amount)
		for _, tt := range []struct {
			name   string
			send   func() response
			status int
			code   string
		}{
			{"missing", func() response { return e.do("POST", "/v1/webhooks/stripe", "", string(body)) }, 400, "invalid_signature"},
			{"wrong secret", func() response { return e.webhookAt(body, "whsec_other", time.Now()) }, 400, "invalid_signature"},
			{"stale", func() response { return e.webhookAt(body, webhookSecret, time.Now().Add(-6*time.Minute)) }, 400, "invalid_signature"},
			{"body changed after signing", func() response {
				r := e.webhookAt(body, webhookSecret, time.Now())
				_ = r
				return e.do("POST", "/v1/webhooks/stripe", "", string(body)+" ", "Stripe-Signature", "t=1,v1=00")
			}, 400, "invalid_signature"},
			{"too large", func() response {
				big := bytes.Repeat([]byte(" "), billing.MaxWebhookBytes)
				return e.webhook(append(append([]byte{}, body[:len(body)-1]...), append(big, '}')...))
			}, 413, "payload_too_large"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				before := e.count(`SELECT count(*) FROM processor_events`)
				r := tt.send()
				if r.status != tt.status || r.body["code"] != tt.code {
					t.Fatalf("status %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
				}
				if strings.Contains(string(r.raw), webhookSecret) || strings.Contains(e.logs.String(), webhookSecret) {
					t.Error("the webhook secret leaked into an answer or a log")
				}
				// "body changed" sent a good one first.
				if tt.name != "body changed after signing" && e.count(`SELECT count(*) FROM processor_events`) != before {
					t.Error("a refused webhook stored something")
				}
			})
		}
	})
}

func TestWebhookOneTimePaymentOpensInboxItem(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plans := e.seed()
		plan := plans["Platform"]
		tests := []struct {
			name, account, planID string
			amount                int64
			outcome, state        string
			reason                string
			emitted               int
		}{
			{"settled, facts pending the buyer", team, plan.ID, plan.Amount, "applied", billing.StateNeedsAttention, billing.ReasonFactsUnmet, 1},
			{"unknown account", "not-an-account", plan.ID, plan.Amount, "needs_attention", billing.StateNeedsAttention, billing.ReasonUnknownAccount, 0},
			{"unknown plan", team, "cccccccc-cccc-4ccc-8ccc-cccccccccccc", plan.Amount, "needs_attention", billing.StateNeedsAttention, billing.ReasonUnknownPlan, 0},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := plan
				p.ID = tt.planID
				ev := fmt.Sprintf("evt_once_%d", i)
				pid := fmt.Sprintf("pi_once_%d", i)
				before := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.payment.succeeded'`)
				r := e.webhook(checkoutCompleted(ev, fmt.Sprintf("cs_once_%d", i), pid, tt.account, p, tt.amount))
				if r.status != 200 || r.body["duplicate"] != false {
					t.Fatalf("webhook = %d %s\n%s", r.status, r.raw, e.logs.String())
				}
				if n := e.count(`SELECT count(*) FROM processor_events WHERE id = $1 AND outcome = $2`, ev, tt.outcome); n != 1 {
					t.Errorf("event not recorded as %s", tt.outcome)
				}
				if n := e.count(`SELECT count(*) FROM reconciliations r JOIN payments p ON p.id = r.payment_id
					WHERE p.processor_payment_id = $1 AND r.state = $2 AND r.reason = $3`, pid, tt.state, tt.reason); n != 1 {
					t.Errorf("no %s/%s inbox item", tt.state, tt.reason)
				}
				if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.payment.succeeded'`) - before; n != tt.emitted {
					t.Errorf("payment.succeeded events = %d, want %d", n, tt.emitted)
				}
			})
		}
	})
}

// TestWebhookReplayedConcurrentlyAppliesOnce: the same event 50 times at
// once is applied once: one payment, one inbox item, one event.
func TestWebhookReplayedConcurrentlyAppliesOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		body := checkoutCompleted("evt_replay", "cs_replay", "pi_replay", team, plan, plan.Amount)
		var wg sync.WaitGroup
		statuses := make([]int, 50)
		dups := make([]any, 50)
		for i := range statuses {
			wg.Go(func() {
				r := e.webhook(body)
				statuses[i], dups[i] = r.status, r.body["duplicate"]
			})
		}
		wg.Wait()
		fresh := 0
		for i, s := range statuses {
			if s != 200 {
				t.Fatalf("replay %d answered %d", i, s)
			}
			if dups[i] == false {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d deliveries applied, want 1", fresh)
		}
		for q, want := range map[string]int{
			`SELECT count(*) FROM processor_events`:                                1,
			`SELECT count(*) FROM payments`:                                        1,
			`SELECT count(*) FROM reconciliations`:                                 1,
			`SELECT count(*) FROM outbox WHERE type = 'billing.payment.succeeded'`: 1,
		} {
			if n := e.count(q); n != want {
				t.Errorf("%s = %d, want %d", q, n, want)
			}
		}
	})
}

func subscriptionEvent(id, typ string, created int64, sub, status string, plan billing.Plan) []byte {
	return stripeEvent(id, typ, created, map[string]any{"id": sub, "object": "subscription", "customer": "cus_2", "status": status,
		"metadata": map[string]any{"account_id": team, "plan_id": plan.ID},
		"items": map[string]any{"object": "list", "data": []any{map[string]any{"id": "si_1", "object": "subscription_item",
			"price": map[string]any{"id": plan.ProcessorPriceID, "object": "price"}, "current_period_end": created + 86400*30}}}})
}

// TestWebhookSubscriptionOrder: an older customer.subscription.updated
// arriving after a newer one is recorded and leaves the newer state.
func TestWebhookSubscriptionOrder(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		t0 := time.Now().Unix() - 100
		steps := []struct {
			id, typ string
			at      int64
			status  string
			emitted string
			outcome string
		}{
			{"evt_s1", "customer.subscription.created", t0, "active", billing.TypeSubscriptionStarted, "applied"},
			{"evt_s3", "customer.subscription.updated", t0 + 20, "past_due", billing.TypeSubscriptionPastDue, "applied"},
			{"evt_s2", "customer.subscription.updated", t0 + 10, "active", "", "stale"},
			{"evt_s4", "customer.subscription.deleted", t0 + 30, "canceled", billing.TypeSubscriptionCanceled, "applied"},
		}
		for _, s := range steps {
			before := e.count(`SELECT count(*) FROM outbox WHERE type LIKE 'billing.subscription.%'`)
			if r := e.webhook(subscriptionEvent(s.id, s.typ, s.at, "sub_1", s.status, plan)); r.status != 200 {
				t.Fatalf("%s = %d %s", s.id, r.status, r.raw)
			}
			if n := e.count(`SELECT count(*) FROM processor_events WHERE id = $1 AND outcome = $2`, s.id, s.outcome); n != 1 {
				t.Errorf("%s not %s", s.id, s.outcome)
			}
			after := e.count(`SELECT count(*) FROM outbox WHERE type LIKE 'billing.subscription.%'`)
			if (s.emitted == "") != (after == before) {
				t.Errorf("%s emitted %d events, want %q", s.id, after-before, s.emitted)
			}
			if s.emitted != "" && e.count(`SELECT count(*) FROM outbox WHERE type = $1`, s.emitted) != 1 {
				t.Errorf("%s: no %s", s.id, s.emitted)
			}
			if s.id == "evt_s2" && e.count(`SELECT count(*) FROM subscriptions WHERE status = 'past_due'`) != 1 {
				t.Error("the older event overwrote the newer state")
			}
		}
		var data string
		if err := e.db.QueryRow(context.Background(), `SELECT data FROM outbox WHERE type = 'billing.subscription.started'`).Scan(&data); err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(data), &d); err != nil || d["plan_id"] != plan.ID || d["account_id"] != team {
			t.Errorf("subscription.started data = %s", data)
		}
	})
}

func TestWebhookUnknownTypeIsRecordedWithNoEffect(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		r := e.webhook(stripeEvent("evt_other", "customer.tax_id.created", time.Now().Unix(), map[string]any{"id": "txi_1", "object": "tax_id"}))
		if r.status != 200 {
			t.Fatalf("= %d %s", r.status, r.raw)
		}
		if e.count(`SELECT count(*) FROM processor_events WHERE id = 'evt_other' AND outcome = 'ignored'`) != 1 ||
			e.count(`SELECT count(*) FROM outbox`) != 0 {
			t.Error("an unknown type was not recorded alone")
		}
	})
}

// TestWebhookMoneyMapping walks billing.md §4's rows for a payment: paid,
// refunded in part then in full, disputed; a failure; an invoice.
func TestWebhookMoneyMapping(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		now := time.Now().Unix()
		charge := func(id string, refunded int64) []byte {
			return stripeEvent(id, "charge.refunded", now, map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_m",
				"amount": plan.Amount, "amount_refunded": refunded, "currency": "usd"})
		}
		steps := []struct {
			name    string
			body    []byte
			status  string // the payment's, "" to skip
			emitted string
		}{
			{"paid", checkoutCompleted("evt_m1", "cs_m", "pi_m", team, plan, plan.Amount), billing.PaymentSucceeded, billing.TypePaymentSucceeded},
			{"partial refund", charge("evt_m2", 2000), billing.PaymentPartiallyRefunded, billing.TypePaymentRefunded},
			{"full refund", charge("evt_m3", plan.Amount), billing.PaymentRefunded, billing.TypePaymentRefunded},
			{"dispute", stripeEvent("evt_m4", "charge.dispute.created", now, map[string]any{"id": "dp_1", "object": "dispute",
				"payment_intent": "pi_m", "amount": plan.Amount, "currency": "usd"}), billing.PaymentDisputed, ""},
			{"failed", stripeEvent("evt_m5", "payment_intent.payment_failed", now, map[string]any{"id": "pi_f", "object": "payment_intent",
				"amount": 12000, "currency": "usd", "metadata": map[string]any{"account_id": team, "plan_id": plan.ID},
				"last_payment_error": map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}}), "", billing.TypePaymentFailed},
			{"invoice", stripeEvent("evt_m6", "invoice.finalized", now, map[string]any{"id": "in_1", "object": "invoice",
				"customer": "cus_x", "status": "open", "amount_due": 500, "amount_paid": 0, "currency": "usd",
				"hosted_invoice_url": "https://pay.example/in_1", "invoice_pdf": "https://pay.example/in_1.pdf",
				"parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{"subscription": "sub_9",
					"metadata": map[string]any{"account_id": team, "plan_id": plan.ID}}}}), "", ""},
		}
		for _, s := range steps {
			before := e.count(`SELECT count(*) FROM outbox`)
			if r := e.webhook(s.body); r.status != 200 {
				t.Fatalf("%s = %d %s", s.name, r.status, r.raw)
			}
			if s.status != "" && e.count(`SELECT count(*) FROM payments WHERE processor_payment_id = 'pi_m' AND status = $1`, s.status) != 1 {
				t.Errorf("%s: payment not %s", s.name, s.status)
			}
			if s.emitted != "" && e.count(`SELECT count(*) FROM outbox WHERE type = $1 AND seq > $2`, s.emitted, before) != 1 {
				t.Errorf("%s: no %s", s.name, s.emitted)
			}
			if s.name == "dispute" && e.count(`SELECT count(*) FROM outbox`) != before {
				t.Errorf("a dispute emitted an event")
			}
		}
		if e.count(`SELECT count(*) FROM invoices WHERE processor_invoice_id = 'in_1' AND hosted_url IS NOT NULL`) != 1 ||
			e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.invoice.created'`) != 1 {
			t.Error("the finalized invoice was not stored with its event")
		}
		if e.count(`SELECT count(*) FROM payments WHERE processor_payment_id = 'pi_f' AND status = 'failed' AND amount = 12000`) != 1 {
			t.Error("the failed payment was not stored")
		}
		// The refunded, disputed payment's inbox item is no longer settled.
		if e.count(`SELECT count(*) FROM reconciliations WHERE state = 'needs_attention'`) != 1 {
			t.Error("the refunded payment's item does not need attention")
		}
	})
}
