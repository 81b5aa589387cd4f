package stripeproc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/stripemock"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/logtest"
)

const secretKey = "sk_test_123"

// TestAdapterAgainstStripeMock makes a customer, a price of each interval
// and a checkout session of each mode through stripe-go at stripe-mock.
func TestAdapterAgainstStripeMock(t *testing.T) {
	url := stripemock.Start(t)
	logger, logs := logtest.New()
	c := stripeproc.New(stripeproc.Options{SecretKey: secretKey, APIURL: url, Logger: logger})
	ctx := context.Background()
	cust, err := c.CreateCustomer(ctx, billing.CustomerSpec{AccountID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", Email: "o@example.com", IdempotencyKey: "k1"})
	if err != nil || !strings.HasPrefix(cust, "cus_") {
		t.Fatalf("CreateCustomer = %q, %v", cust, err)
	}
	for _, interval := range []string{billing.IntervalOnce, billing.IntervalMonth} {
		price, err := c.CreatePrice(ctx, billing.Plan{ID: "p1", Name: "Platform", Amount: 12000, Currency: "usd", Interval: interval})
		if err != nil || !strings.HasPrefix(price, "price_") {
			t.Fatalf("CreatePrice(%s) = %q, %v", interval, price, err)
		}
		co, err := c.CreateCheckout(ctx, billing.CheckoutSpec{Mode: billing.CheckoutMode(interval), CustomerID: cust, PriceID: price,
			AccountID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", PlanID: "p1", UserID: "u1", TrialDays: 7,
			SuccessURL: "http://web.example/ok", CancelURL: "http://web.example/no", IdempotencyKey: "k2-" + interval})
		if err != nil || !strings.HasPrefix(co.ID, "cs_") || co.URL == "" {
			t.Fatalf("CreateCheckout(%s) = %+v, %v", interval, co, err)
		}
	}
	// A metered plan: a meter for its metric, a metered price, a
	// subscription checkout without a quantity, and a meter event keyed
	// by the usage id.
	meter := "tokens"
	price, err := c.CreatePrice(ctx, billing.Plan{ID: "p2", Name: "Tokens", Amount: 2, Currency: "usd", Interval: billing.IntervalMonth, Meter: &meter})
	if err != nil || !strings.HasPrefix(price, "price_") {
		t.Fatalf("CreatePrice(metered) = %q, %v", price, err)
	}
	co, err := c.CreateCheckout(ctx, billing.CheckoutSpec{Mode: billing.ModeSubscription, CustomerID: cust, PriceID: price, Metered: true,
		AccountID: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", PlanID: "p2", UserID: "u1",
		SuccessURL: "http://web.example/ok", CancelURL: "http://web.example/no"})
	if err != nil || !strings.HasPrefix(co.ID, "cs_") {
		t.Fatalf("CreateCheckout(metered) = %+v, %v", co, err)
	}
	if id, err := c.Refund(ctx, billing.RefundSpec{PaymentIntentID: "pi_123", Amount: 2000, Currency: "usd", Total: 12000,
		IdempotencyKey: "refund-1"}); err != nil || !strings.HasPrefix(id, "re_") {
		t.Fatalf("Refund = %q, %v", id, err)
	}
	if err := c.ReportUsage(ctx, billing.MeterEvent{Identifier: "0190f3a2-9300-7b1a-9d2e-3f4a5b6c7d8e", EventName: meter, CustomerID: cust,
		Value: 1200, Timestamp: time.Now()}); err != nil {
		t.Fatalf("ReportUsage = %v", err)
	}
	if strings.Contains(logs.String(), secretKey) {
		t.Error("the secret key was logged")
	}
}

// TestAdapterFailsClosed: a processor that does not answer is unavailable,
// and neither the key nor the answer's detail reaches the error.
func TestAdapterFailsClosed(t *testing.T) {
	logger, logs := logtest.New()
	c := stripeproc.New(stripeproc.Options{SecretKey: secretKey, APIURL: "http://127.0.0.1:1", Timeout: time.Second, Logger: logger})
	_, err := c.CreateCustomer(context.Background(), billing.CustomerSpec{AccountID: "a"})
	if errs.Code(err) != billing.CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if err := c.ReportUsage(context.Background(), billing.MeterEvent{Identifier: "u", EventName: "tokens", CustomerID: "cus_1", Value: 1,
		Timestamp: time.Now()}); errs.Code(err) != billing.CodeUnavailable {
		t.Fatalf("ReportUsage err = %v, want unavailable", err)
	}
	if strings.Contains(err.Error()+logs.String(), secretKey) {
		t.Error("the key leaked")
	}
}

const whsec = "whsec_test_secret"

func signed(t *testing.T, typ string, obj map[string]any) (payload []byte, header string) {
	t.Helper()
	payload, _ = json.Marshal(map[string]any{"id": "evt_1", "object": "event", "api_version": stripe.APIVersion, "created": 1700000000,
		"type": typ, "livemode": false, "data": map[string]any{"object": obj}})
	return payload, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: whsec}).Header
}

func TestParse(t *testing.T) {
	acct, plan := "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
	meta := map[string]any{"account_id": acct, "plan_id": plan}
	tests := []struct {
		typ   string
		obj   map[string]any
		check func(billing.ProcessorEvent) bool
	}{
		{"checkout.session.completed", map[string]any{"id": "cs_1", "object": "checkout.session", "mode": "payment", "payment_status": "paid",
			"client_reference_id": acct, "payment_intent": "pi_1", "customer": "cus_1", "amount_total": 12000, "currency": "usd",
			"customer_details": map[string]any{"email": "b@example.com"}, "metadata": meta},
			func(e billing.ProcessorEvent) bool {
				c := e.Checkout
				return c != nil && c.PaymentID == "pi_1" && c.AccountID == acct && c.PlanID == plan && c.Amount == 12000 && c.Email == "b@example.com"
			}},
		{"invoice.paid", map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_1", "amount_due": 500, "amount_paid": 500,
			"currency": "usd", "status": "paid", "parent": map[string]any{"type": "subscription_details",
				"subscription_details": map[string]any{"subscription": "sub_1", "metadata": meta}},
			"lines": map[string]any{"object": "list", "data": []any{map[string]any{"id": "il_1", "object": "line_item",
				"pricing": map[string]any{"type": "price_details", "price_details": map[string]any{"price": "price_1"}}}}}},
			func(e billing.ProcessorEvent) bool {
				f := e.Invoice
				return f != nil && f.SubscriptionID == "sub_1" && f.AccountID == acct && f.PriceID == "price_1" && f.AmountPaid == 500
			}},
		{"payment_intent.payment_failed", map[string]any{"id": "pi_2", "object": "payment_intent", "amount": 900, "currency": "eur",
			"metadata": meta, "last_payment_error": map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}},
			func(e billing.ProcessorEvent) bool {
				return e.Failure != nil && e.Failure.Reason == "insufficient_funds" && e.Failure.Amount == 900
			}},
		{"charge.refunded", map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_1", "amount": 12000, "amount_refunded": 12000, "currency": "usd"},
			func(e billing.ProcessorEvent) bool {
				return e.Charge != nil && e.Charge.PaymentID == "pi_1" && e.Charge.AmountRefunded == 12000
			}},
		{"charge.refunded", map[string]any{"id": "ch_2", "object": "charge", "invoice": "in_1", "amount": 500, "amount_refunded": 100, "currency": "usd"},
			func(e billing.ProcessorEvent) bool {
				return e.Charge != nil && e.Charge.PaymentID == "" && e.Charge.InvoiceID == "in_1" && e.Charge.AmountRefunded == 100
			}},
		{"invoice.paid", map[string]any{"id": "in_2", "object": "invoice", "customer": "cus_1", "amount_due": 500, "amount_paid": 500,
			"currency": "usd", "status": "paid", "payments": map[string]any{"object": "list", "data": []any{map[string]any{"id": "inpay_1",
				"object": "invoice_payment", "payment": map[string]any{"type": "payment_intent", "payment_intent": "pi_9"}}}}},
			func(e billing.ProcessorEvent) bool { return e.Invoice != nil && e.Invoice.PaymentIntentID == "pi_9" }},
		{"charge.dispute.created", map[string]any{"id": "dp_1", "object": "dispute", "payment_intent": "pi_1", "amount": 12000, "currency": "usd"},
			func(e billing.ProcessorEvent) bool { return e.Dispute != nil && e.Dispute.PaymentID == "pi_1" }},
		{"customer.subscription.updated", map[string]any{"id": "sub_1", "object": "subscription", "customer": "cus_1", "status": "past_due",
			"metadata": meta, "items": map[string]any{"object": "list", "data": []any{map[string]any{"id": "si_1", "object": "subscription_item",
				"price": map[string]any{"id": "price_1", "object": "price"}, "current_period_end": 1700086400}}}},
			func(e billing.ProcessorEvent) bool {
				s := e.Subscription
				return s != nil && s.Status == "past_due" && s.PriceID == "price_1" && s.CurrentPeriodEnd != nil && s.CurrentPeriodEnd.Unix() == 1700086400
			}},
		{"customer.created", map[string]any{"id": "cus_1", "object": "customer"},
			func(e billing.ProcessorEvent) bool {
				return e.Checkout == nil && e.Invoice == nil && e.Failure == nil && e.Charge == nil && e.Dispute == nil && e.Subscription == nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			payload, header := signed(t, tt.typ, tt.obj)
			ev, err := stripeproc.Parse(payload, header, whsec)
			if err != nil {
				t.Fatal(err)
			}
			if ev.ID != "evt_1" || ev.Type != tt.typ || ev.Created != 1700000000 || !tt.check(ev) {
				t.Errorf("Parse = %+v", ev)
			}
		})
	}
}

func TestParseRefusesSignatures(t *testing.T) {
	payload, good := signed(t, "customer.created", map[string]any{"id": "cus_1"})
	stale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: whsec, Timestamp: time.Now().Add(-6 * time.Minute)}).Header
	for name, h := range map[string]string{"missing": "", "garbage": "nope", "wrong secret": webhook.GenerateTestSignedPayload(
		&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_other"}).Header, "stale": stale} {
		if _, err := stripeproc.Parse(payload, h, whsec); !errors.Is(err, stripeproc.ErrSignature) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := stripeproc.Parse(append(payload, ' '), good, whsec); !errors.Is(err, stripeproc.ErrSignature) {
		t.Errorf("a changed body verified: %v", err)
	}
	if _, err := stripeproc.Parse(payload, stripeproc.Sign(payload, whsec, time.Now()), whsec); err != nil {
		t.Errorf("Sign's header does not verify: %v", err)
	}
}
