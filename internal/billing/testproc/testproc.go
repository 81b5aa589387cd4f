// Package testproc is the test payment processor of development
// (billing.md §1): billing.Processor answered in memory, and a hosted
// checkout page at /dev/checkout/{id} that takes Stripe's documented test
// card numbers and then posts webhook events in Stripe's JSON shapes,
// signed with Stripe's scheme, to billing's own webhook route, so
// development runs the production webhook code. It is refused outside
// development (billingcmd).
package testproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/errs"
)

// Stripe's documented test cards the page knows.
const (
	CardPays              = "4242424242424242"
	CardDeclined          = "4000000000000002"
	CardInsufficientFunds = "4000000000009995"
)

// Options configure the test processor.
type Options struct {
	// PublicURL is where buyers reach billing's /dev/checkout pages.
	PublicURL string
	// WebhookURL is billing's own POST /v1/webhooks/stripe.
	WebhookURL string
	// WebhookSecret signs what it posts (whsec_…).
	WebhookSecret string
	Logger        *slog.Logger
}

// Processor is the test processor; safe for concurrent use.
type Processor struct {
	o      Options
	http   *http.Client
	mu     sync.Mutex
	checks map[string]*session
	meters map[string]billing.MeterEvent
}

type session struct {
	billing.CheckoutSpec
	id        string
	customer  string
	expiresAt time.Time
	done      bool
}

var _ billing.Processor = (*Processor)(nil)

// New returns a test processor.
func New(o Options) *Processor {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return &Processor{o: o, http: &http.Client{Timeout: 10 * time.Second}, checks: map[string]*session{}, meters: map[string]billing.MeterEvent{}}
}

// SetWebhookURL names billing's own webhook route once its listener is
// known.
func (p *Processor) SetWebhookURL(u string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.o.WebhookURL = u
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// CreateCustomer implements billing.Processor.
func (p *Processor) CreateCustomer(context.Context, billing.CustomerSpec) (string, error) {
	return newID("cus_test_"), nil
}

// CreatePrice implements billing.Processor.
func (p *Processor) CreatePrice(context.Context, billing.Plan) (string, error) {
	return newID("price_test_"), nil
}

// CreateCheckout implements billing.Processor.
func (p *Processor) CreateCheckout(_ context.Context, s billing.CheckoutSpec) (billing.ProcessorCheckout, error) {
	id := newID("cs_test_")
	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks[id] = &session{CheckoutSpec: s, id: id, customer: s.CustomerID, expiresAt: exp}
	return billing.ProcessorCheckout{ID: id, URL: p.o.PublicURL + "/dev/checkout/" + id, ExpiresAt: exp}, nil
}

// ReportUsage implements billing.Processor: kept in memory by identifier,
// as Stripe counts one identifier once.
func (p *Processor) ReportUsage(_ context.Context, e billing.MeterEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, seen := p.meters[e.Identifier]; !seen {
		p.meters[e.Identifier] = e
	}
	return nil
}

// Refund implements billing.Processor as Stripe does it: the refund is
// accepted and charge.refunded, with the charge's new amount_refunded,
// is posted signed to billing's webhook route before it answers.
func (p *Processor) Refund(ctx context.Context, r billing.RefundSpec) (string, error) {
	id := newID("re_test_")
	ch := event("charge.refunded", map[string]any{"id": newID("ch_test_"), "object": "charge", "payment_intent": r.PaymentIntentID,
		"amount": r.Total, "amount_refunded": r.AlreadyRefunded + r.Amount, "currency": r.Currency, "refunded": r.AlreadyRefunded+r.Amount >= r.Total,
		"status": "succeeded"})
	if err := p.post(ctx, []map[string]any{ch}); err != nil {
		p.o.Logger.WarnContext(ctx, "test processor: refund webhook delivery failed", "err", err.Error())
		return "", errs.New(billing.CodeUnavailable, "payment processor unavailable")
	}
	return id, nil
}

// MeterEvents returns the meter events received, one per identifier.
func (p *Processor) MeterEvents() []billing.MeterEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]billing.MeterEvent, 0, len(p.meters))
	for _, e := range p.meters {
		out = append(out, e)
	}
	return out
}

// Handler serves the hosted checkout page: GET shows the form, POST pays.
func (p *Processor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dev/checkout/{id}", func(w http.ResponseWriter, r *http.Request) { p.page(w, r, http.StatusOK, "") })
	mux.HandleFunc("POST /dev/checkout/{id}", p.pay)
	return mux
}

func (p *Processor) lookup(id string) (*session, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.checks[id]
	if !ok || time.Now().After(s.expiresAt) {
		return nil, false
	}
	return s, true
}

var page = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test checkout</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto}label{display:block;margin:.8rem 0}
input{width:100%;padding:.4rem}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#a00}.note{color:#555;font-size:.9rem}</style></head>
<body><main><h1>Test checkout</h1>
<p class="note">Development only: no money moves. Pay with 4242 4242 4242 4242; 4000 0000 0000 0002 is declined; 4000 0000 0000 9995 fails for funds.</p>
<p>Amount: <strong id="amount">{{.Amount}}</strong></p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
{{if .Done}}<p>This checkout is complete.</p>{{else}}
<form method="post"><label>Email <input name="email" type="email" autocomplete="email" required></label>
<label>Card number <input name="card" inputmode="numeric" autocomplete="cc-number" required></label>
<label>Expiry <input name="exp" value="12/34"></label><label>CVC <input name="cvc" value="123"></label>
<button type="submit">Pay</button></form>
<p><a href="{{.Cancel}}">Cancel</a></p>{{end}}
</main></body></html>`))

func (p *Processor) page(w http.ResponseWriter, r *http.Request, status int, problem string) {
	s, ok := p.lookup(r.PathValue("id"))
	if !ok {
		http.Error(w, "checkout not found or expired", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = page.Execute(w, map[string]any{"Amount": fmt.Sprintf("%d.%02d %s", s.Amount/100, s.Amount%100, strings.ToUpper(s.Currency)),
		"Error": problem, "Done": s.done, "Cancel": s.CancelURL})
}

func (p *Processor) pay(w http.ResponseWriter, r *http.Request) {
	s, ok := p.lookup(r.PathValue("id"))
	if !ok {
		http.Error(w, "checkout not found or expired", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	card := strings.NewReplacer(" ", "", "-", "").Replace(r.PostFormValue("card"))
	email := strings.TrimSpace(r.PostFormValue("email"))
	p.mu.Lock()
	done := s.done
	if card == CardPays {
		s.done = true
	}
	p.mu.Unlock()
	if done {
		http.Redirect(w, r, s.SuccessURL, http.StatusSeeOther)
		return
	}
	var events []map[string]any
	switch card {
	case CardPays:
		events = p.paid(s, email)
	case CardDeclined, CardInsufficientFunds:
		code := "card_declined"
		if card == CardInsufficientFunds {
			code = "insufficient_funds"
		}
		events = []map[string]any{event("payment_intent.payment_failed", map[string]any{
			"id": newID("pi_test_"), "object": "payment_intent", "amount": s.Amount, "currency": s.Currency,
			"customer": s.customer, "status": "requires_payment_method", "metadata": s.metadata(),
			"last_payment_error": map[string]any{"type": "card_error", "code": "card_declined", "decline_code": code},
		})}
	default:
		p.page(w, r, http.StatusUnprocessableEntity, "Use one of Stripe's test card numbers.")
		return
	}
	if err := p.post(r.Context(), events); err != nil {
		p.o.Logger.WarnContext(r.Context(), "test processor: webhook delivery failed", "err", err.Error())
		p.mu.Lock()
		s.done = false
		p.mu.Unlock()
		p.page(w, r, http.StatusServiceUnavailable, "The payment could not be recorded; try again.")
		return
	}
	if card != CardPays {
		msg := "Your card was declined."
		if card == CardInsufficientFunds {
			msg = "Your card has insufficient funds."
		}
		p.page(w, r, http.StatusPaymentRequired, msg)
		return
	}
	http.Redirect(w, r, s.SuccessURL, http.StatusSeeOther)
}

func (s *session) metadata() map[string]string {
	return map[string]string{"account_id": s.AccountID, "plan_id": s.PlanID, "user_id": s.UserID}
}

// paid is what Stripe sends for a paid session: the session completed for
// a one-time payment; the subscription, its invoice finalized and paid,
// and the session completed for a subscription.
func (p *Processor) paid(s *session, email string) []map[string]any {
	sess := map[string]any{"id": s.id, "object": "checkout.session", "mode": s.Mode, "status": "complete",
		"payment_status": "paid", "client_reference_id": s.AccountID, "customer": s.customer,
		"customer_details": map[string]any{"email": email}, "amount_total": s.Amount, "currency": s.Currency,
		"metadata": s.metadata(), "expires_at": s.expiresAt.Unix()}
	if s.Mode == billing.ModePayment {
		sess["payment_intent"] = newID("pi_test_")
		return []map[string]any{event("checkout.session.completed", sess)}
	}
	subID, invID, piID := newID("sub_test_"), newID("in_test_"), newID("pi_test_")
	now := time.Now()
	end := now.AddDate(0, 1, 0)
	if s.Interval == billing.IntervalYear {
		end = now.AddDate(1, 0, 0)
	}
	status := "active"
	if s.TrialDays > 0 {
		status = "trialing"
	}
	sess["subscription"] = subID
	sub := map[string]any{"id": subID, "object": "subscription", "customer": s.customer, "status": status, "metadata": s.metadata(),
		"items": map[string]any{"object": "list", "data": []any{map[string]any{"id": newID("si_test_"), "object": "subscription_item",
			"price": map[string]any{"id": s.PriceID, "object": "price"}, "current_period_end": end.Unix()}}}}
	inv := func(st string, paid int64) map[string]any {
		return map[string]any{"id": invID, "object": "invoice", "customer": s.customer, "customer_email": email, "status": st,
			"amount_due": s.Amount, "amount_paid": paid, "currency": s.Currency,
			"hosted_invoice_url": p.o.PublicURL + "/dev/invoices/" + invID, "invoice_pdf": p.o.PublicURL + "/dev/invoices/" + invID + ".pdf",
			"parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{"subscription": subID, "metadata": s.metadata()}},
			"lines": map[string]any{"object": "list", "data": []any{map[string]any{"id": newID("il_test_"), "object": "line_item",
				"pricing": map[string]any{"type": "price_details", "price_details": map[string]any{"price": s.PriceID}}}}},
			"payments": map[string]any{"object": "list", "data": []any{map[string]any{"id": newID("inpay_test_"), "object": "invoice_payment",
				"payment": map[string]any{"type": "payment_intent", "payment_intent": piID}}}}}
	}
	return []map[string]any{
		event("customer.subscription.created", sub),
		event("invoice.finalized", inv("open", 0)),
		event("invoice.paid", inv("paid", s.Amount)),
		event("checkout.session.completed", sess),
	}
}

// event wraps obj in Stripe's event envelope.
func event(typ string, obj map[string]any) map[string]any {
	return map[string]any{"id": newID("evt_test_"), "object": "event", "api_version": stripe.APIVersion,
		"created": time.Now().Unix(), "livemode": false, "pending_webhooks": 1, "type": typ,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "data": map[string]any{"object": obj}}
}

// post delivers events in order, each signed, to billing's webhook route.
func (p *Processor) post(ctx context.Context, events []map[string]any) error {
	p.mu.Lock()
	target := p.o.WebhookURL
	p.mu.Unlock()
	for _, ev := range events {
		body, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", stripeproc.Sign(body, p.o.WebhookSecret, time.Now()))
		resp, err := p.http.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("webhook answered %d for %v", resp.StatusCode, ev["type"])
		}
	}
	return nil
}
