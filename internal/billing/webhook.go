package billing

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Processor event types billing maps (billing.md §4); any other type is
// recorded with no effect.
const (
	EvCheckoutCompleted     = "checkout.session.completed"
	EvInvoiceFinalized      = "invoice.finalized"
	EvInvoicePaid           = "invoice.paid"
	EvInvoicePaymentFailed  = "invoice.payment_failed"
	EvPaymentIntentFailed   = "payment_intent.payment_failed"
	EvChargeRefunded        = "charge.refunded"
	EvDisputeCreated        = "charge.dispute.created"
	EvSubscriptionCreated   = "customer.subscription.created"
	EvSubscriptionUpdated   = "customer.subscription.updated"
	EvSubscriptionDeleted   = "customer.subscription.deleted"
	MaxWebhookBytes         = 256 << 10
	WebhookTolerance        = 5 * time.Minute
	processorEventIDMaxSize = 255
)

// Outcome is what an event did, as recorded beside its id.
type Outcome string

// Outcomes.
const (
	OutcomeApplied        Outcome = "applied"
	OutcomeIgnored        Outcome = "ignored"
	OutcomeStale          Outcome = "stale"
	OutcomeNeedsAttention Outcome = "needs_attention"
)

// ProcessorEvent is a verified processor event, normalised from Stripe's
// shapes by the adapter (stripeproc.Parse). Exactly one of the pointers is
// set for a mapped type; none for another type.
type ProcessorEvent struct {
	ID      string
	Type    string
	Created int64

	Checkout     *CheckoutPaid
	Invoice      *InvoiceFact
	Failure      *PaymentFailure
	Charge       *ChargeFact
	Dispute      *DisputeFact
	Subscription *SubscriptionFact
}

// CheckoutPaid is a completed Checkout Session.
type CheckoutPaid struct {
	SessionID     string
	Mode          string
	PaymentStatus string // paid, unpaid, no_payment_required
	PaymentID     string // the PaymentIntent
	AccountID     string // client_reference_id, else metadata
	PlanID        string
	UserID        string
	CustomerID    string
	Amount        int64
	Currency      string
	Email         string
}

// InvoiceFact is an invoice event's object.
type InvoiceFact struct {
	ID             string
	CustomerID     string
	SubscriptionID string
	PriceID        string
	AccountID      string // subscription metadata, when carried
	PlanID         string
	AmountDue      int64
	AmountPaid     int64
	Currency       string
	Status         string
	HostedURL      string
	PDFURL         string
	Email          string
	// PaymentIntentID is the PaymentIntent that paid it (the invoice's
	// payments), which a refund's charge names.
	PaymentIntentID string
}

// PaymentFailure is a failed PaymentIntent.
type PaymentFailure struct {
	PaymentID  string
	CustomerID string
	AccountID  string
	PlanID     string
	Amount     int64
	Currency   string
	Reason     string
}

// ChargeFact is a refunded charge.
type ChargeFact struct {
	PaymentID      string // the PaymentIntent
	InvoiceID      string
	Amount         int64
	AmountRefunded int64
	Currency       string
}

// DisputeFact is a dispute opened on a payment.
type DisputeFact struct {
	PaymentID string
	Amount    int64
	Currency  string
}

// SubscriptionFact is a subscription event's object.
type SubscriptionFact struct {
	ID               string
	CustomerID       string
	AccountID        string
	PlanID           string
	PriceID          string
	Status           string
	CurrentPeriodEnd *time.Time
}

// Webhooks applies verified processor events: the mapping table of
// billing.md §4 over the state StateTx reads and writes, in the
// transaction that records the event id.
type Webhooks struct {
	store Store
}

// NewWebhooks returns the webhook applier over store.
func NewWebhooks(store Store) *Webhooks { return &Webhooks{store: store} }

// Apply records ev and applies it once: a replay (the same id) returns
// duplicate true and changes nothing.
func (w *Webhooks) Apply(ctx context.Context, ev ProcessorEvent) (duplicate bool, err error) {
	return w.store.Apply(ctx, ev, func(tx StateTx) (Outcome, error) { return apply(ctx, tx, ev) })
}

func apply(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	switch {
	case ev.Checkout != nil:
		return applyCheckout(ctx, tx, ev)
	case ev.Invoice != nil && ev.Type == EvInvoiceFinalized:
		return applyInvoiceFinalized(ctx, tx, ev)
	case ev.Invoice != nil && ev.Type == EvInvoicePaid:
		return applyInvoicePaid(ctx, tx, ev)
	case ev.Invoice != nil && ev.Type == EvInvoicePaymentFailed:
		f := ev.Invoice
		return applyFailure(ctx, tx, ev, PaymentFailure{PaymentID: f.ID, CustomerID: f.CustomerID, AccountID: f.AccountID,
			PlanID: f.PlanID, Amount: f.AmountDue - f.AmountPaid, Currency: f.Currency, Reason: "invoice_payment_failed"}, f.SubscriptionID)
	case ev.Failure != nil:
		return applyFailure(ctx, tx, ev, *ev.Failure, "")
	case ev.Charge != nil:
		return applyRefund(ctx, tx, ev)
	case ev.Dispute != nil:
		return applyDispute(ctx, tx, ev)
	case ev.Subscription != nil:
		return applySubscription(ctx, tx, ev)
	}
	return OutcomeIgnored, nil
}

// attention opens an inbox item for an event billing could not place.
func attention(ctx context.Context, tx StateTx, ev ProcessorEvent, paymentID, accountID, planID, reason string) (Outcome, error) {
	r := Reconciliation{PaymentID: paymentID, ProcessorEventID: ev.ID, AccountID: accountID, PlanID: planID,
		State: StateNeedsAttention, Reason: reason}
	if err := tx.SaveReconciliation(ctx, &r); err != nil {
		return "", err
	}
	return OutcomeNeedsAttention, nil
}

// resolve names the account and plan of an event: what it carries, else
// the customer's account and the price's plan.
func resolve(ctx context.Context, tx StateTx, accountID, planID, customerID, priceID string) (string, *Plan, error) {
	if accountID == "" && customerID != "" {
		c, ok, err := tx.CustomerByProcessor(ctx, customerID)
		if err != nil {
			return "", nil, err
		}
		if ok {
			accountID = c.AccountID
		}
	}
	var plan *Plan
	if planID != "" {
		p, ok, err := tx.PlanByID(ctx, planID)
		if err != nil {
			return "", nil, err
		}
		if ok {
			plan = &p
		}
	} else if priceID != "" {
		p, ok, err := tx.PlanByPrice(ctx, priceID)
		if err != nil {
			return "", nil, err
		}
		if ok {
			plan = &p
		}
	}
	return accountID, plan, nil
}

func applyCheckout(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	c := ev.Checkout
	if c.Mode != ModePayment || c.PaymentStatus != "paid" {
		// A subscription's money arrives as invoice.paid.
		return OutcomeIgnored, nil
	}
	paymentRef := c.PaymentID
	if paymentRef == "" {
		paymentRef = c.SessionID
	}
	// The payment, the plan and the buyer's checkout in one go: each
	// read is independent of the others and of the writes below.
	look, err := tx.CheckoutLookup(ctx, paymentRef, c.PlanID, c.SessionID)
	if err != nil || look.PaymentRecorded {
		return OutcomeIgnored, err
	}
	accountID, plan := c.AccountID, look.Plan
	if accountID == "" && c.CustomerID != "" {
		if accountID, _, err = resolve(ctx, tx, "", "", c.CustomerID, ""); err != nil {
			return "", err
		}
	}
	p := Payment{ProcessorPaymentID: paymentRef, AccountID: accountID, Kind: KindCheckout, Amount: c.Amount,
		Currency: c.Currency, Status: PaymentSucceeded, Email: c.Email, CheckoutSessionID: c.SessionID, LastEventCreated: ev.Created}
	if plan != nil {
		p.PlanID = plan.ID
	}
	if !ValidUUID(accountID) {
		p.AccountID = ""
	}
	if err := tx.SavePayment(ctx, &p); err != nil {
		return "", err
	}
	switch {
	case p.AccountID == "":
		return attention(ctx, tx, ev, p.ID, "", p.PlanID, ReasonUnknownAccount)
	case plan == nil:
		return attention(ctx, tx, ev, p.ID, p.AccountID, "", ReasonUnknownPlan)
	}
	if err := tx.Emit(ctx, paymentSucceededCheckout(ev, p)); err != nil {
		return "", err
	}
	if m, ok := receipt(p, plan.Name); ok {
		if err := tx.QueueMail(ctx, m); err != nil {
			return "", err
		}
	}
	facts := Facts{
		AmountMatches: p.Amount == plan.Amount && p.Currency == plan.Currency,
		OneTime:       plan.Interval == IntervalOnce,
		Products:      slices.Clone(plan.Products),
		Settled:       true,
		PaymentEmail:  p.Email,
	}
	if co := look.Checkout; co != nil && co.AccountID == p.AccountID {
		facts.TeamAccount, facts.BuyerRole, facts.BuyerEmail = true, co.BuyerRole, co.BuyerEmail
	}
	r := Reconciliation{PaymentID: p.ID, ProcessorEventID: ev.ID, AccountID: p.AccountID, PlanID: plan.ID,
		State: StateAwaitingGrant, Facts: facts}
	if !facts.AllMet() {
		r.State, r.Reason = StateNeedsAttention, ReasonFactsUnmet
	}
	if err := tx.SaveReconciliation(ctx, &r); err != nil {
		return "", err
	}
	return OutcomeApplied, nil
}

func applyInvoiceFinalized(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	f := ev.Invoice
	accountID, _, err := resolve(ctx, tx, f.AccountID, "", f.CustomerID, "")
	if err != nil {
		return "", err
	}
	if !ValidUUID(accountID) {
		return attention(ctx, tx, ev, "", "", "", ReasonUnknownAccount)
	}
	inv := Invoice{ProcessorInvoiceID: f.ID, AccountID: accountID, SubscriptionID: f.SubscriptionID, AmountDue: f.AmountDue,
		Currency: f.Currency, Status: f.Status, HostedURL: f.HostedURL, PDFURL: f.PDFURL}
	created, err := tx.SaveInvoice(ctx, &inv)
	if err != nil || !created {
		return OutcomeIgnored, err
	}
	if err := tx.Emit(ctx, invoiceCreated(ev, inv)); err != nil {
		return "", err
	}
	return OutcomeApplied, nil
}

func applyInvoicePaid(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	f := ev.Invoice
	if old, ok, err := tx.Payment(ctx, f.ID); err != nil {
		return "", err
	} else if ok && old.Status == PaymentSucceeded {
		return OutcomeIgnored, nil
	}
	accountID, plan, err := resolve(ctx, tx, f.AccountID, f.PlanID, f.CustomerID, f.PriceID)
	if err != nil {
		return "", err
	}
	p, _, err := tx.Payment(ctx, f.ID)
	if err != nil {
		return "", err
	}
	p.ProcessorPaymentID, p.Kind, p.Amount, p.Currency = f.ID, KindInvoice, f.AmountPaid, f.Currency
	p.Status, p.Email, p.InvoiceID, p.SubscriptionID, p.LastEventCreated = PaymentSucceeded, f.Email, f.ID, f.SubscriptionID, ev.Created
	p.PaymentIntentID = f.PaymentIntentID
	if ValidUUID(accountID) {
		p.AccountID = accountID
	}
	if plan != nil {
		p.PlanID = plan.ID
	}
	if err := tx.SavePayment(ctx, &p); err != nil {
		return "", err
	}
	if p.AccountID == "" {
		return attention(ctx, tx, ev, p.ID, "", p.PlanID, ReasonUnknownAccount)
	}
	if err := tx.Emit(ctx, paymentSucceededInvoice(ev, p)); err != nil {
		return "", err
	}
	item := "invoice " + p.InvoiceID
	if plan != nil {
		item = plan.Name + " (invoice " + p.InvoiceID + ")"
	}
	if m, ok := receipt(p, item); ok {
		if err := tx.QueueMail(ctx, m); err != nil {
			return "", err
		}
	}
	// A subscription's payment is not a sale under the procedure: ask.
	r := Reconciliation{PaymentID: p.ID, ProcessorEventID: ev.ID, AccountID: p.AccountID, PlanID: p.PlanID,
		State: StateNeedsAttention, Reason: ReasonNotASale, Facts: Facts{Settled: true, PaymentEmail: p.Email}}
	if plan != nil {
		r.Facts.Products = slices.Clone(plan.Products)
	}
	if err := tx.SaveReconciliation(ctx, &r); err != nil {
		return "", err
	}
	return OutcomeApplied, nil
}

func applyFailure(ctx context.Context, tx StateTx, ev ProcessorEvent, f PaymentFailure, subscriptionID string) (Outcome, error) {
	p, ok, err := tx.Payment(ctx, f.PaymentID)
	if err != nil {
		return "", err
	}
	if ok && p.Status != PaymentFailed {
		// A payment that settled or was refunded stays so.
		return OutcomeStale, nil
	}
	accountID, plan, err := resolve(ctx, tx, f.AccountID, f.PlanID, f.CustomerID, "")
	if err != nil {
		return "", err
	}
	p.ProcessorPaymentID, p.Amount, p.Currency, p.Status, p.LastEventCreated = f.PaymentID, f.Amount, f.Currency, PaymentFailed, ev.Created
	p.SubscriptionID = subscriptionID
	if p.Kind == "" {
		p.Kind = KindCheckout
		if ev.Type == EvInvoicePaymentFailed {
			p.Kind, p.InvoiceID = KindInvoice, f.PaymentID
		}
	}
	if ValidUUID(accountID) {
		p.AccountID = accountID
	}
	if plan != nil {
		p.PlanID = plan.ID
	}
	if err := tx.SavePayment(ctx, &p); err != nil {
		return "", err
	}
	if p.AccountID == "" {
		return OutcomeIgnored, nil // nobody to tell; the processor's dashboard has it
	}
	if err := tx.Emit(ctx, paymentFailed(ev, p, f.Reason)); err != nil {
		return "", err
	}
	if to, err := tx.AccountEmail(ctx, p.AccountID); err != nil {
		return "", err
	} else if to != "" {
		reason := f.Reason
		if reason == "" {
			reason = "payment_failed"
		}
		if err := tx.QueueMail(ctx, Mail{Template: TemplatePaymentFailed, To: to, AccountID: p.AccountID, Data: map[string]string{
			"amount": FormatAmount(p.Amount, p.Currency), "reason": strings.ReplaceAll(reason, "_", " ")}}); err != nil {
			return "", err
		}
	}
	return OutcomeApplied, nil
}

func applyRefund(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	c := ev.Charge
	p, ok, err := tx.PaymentOfCharge(ctx, c.PaymentID, c.InvoiceID)
	if err != nil {
		return "", err
	}
	if !ok {
		return attention(ctx, tx, ev, "", "", "", ReasonUnknownAccount)
	}
	if ev.Created < p.LastEventCreated && p.AmountRefunded >= c.AmountRefunded {
		return OutcomeStale, nil
	}
	if c.AmountRefunded <= p.AmountRefunded {
		return OutcomeIgnored, nil
	}
	p.AmountRefunded = c.AmountRefunded
	p.Status = PaymentPartiallyRefunded
	if p.AmountRefunded >= p.Amount {
		p.Status = PaymentRefunded
	}
	p.LastEventCreated = max(p.LastEventCreated, ev.Created)
	if err := tx.SavePayment(ctx, &p); err != nil {
		return "", err
	}
	if p.AccountID != "" {
		if err := tx.Emit(ctx, paymentRefunded(ev, p)); err != nil {
			return "", err
		}
	}
	return OutcomeApplied, unsettle(ctx, tx, p, ReasonRevokeRefunded)
}

func applyDispute(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	p, ok, err := tx.Payment(ctx, ev.Dispute.PaymentID)
	if err != nil {
		return "", err
	}
	if !ok {
		return attention(ctx, tx, ev, "", "", "", ReasonUnknownAccount)
	}
	p.Status, p.LastEventCreated = PaymentDisputed, max(p.LastEventCreated, ev.Created)
	if err := tx.SavePayment(ctx, &p); err != nil {
		return "", err
	}
	return OutcomeApplied, unsettle(ctx, tx, p, ReasonRevokeDisputed)
}

// unsettle marks the payment's inbox item: a granted one needs a revoke
// (revoke first on a dispute), an ungranted one is no longer settled.
func unsettle(ctx context.Context, tx StateTx, p Payment, reason string) error {
	r, ok, err := tx.ReconciliationOf(ctx, p.ID)
	if err != nil || !ok {
		return err
	}
	r.Facts.Settled = false
	switch r.State {
	case StateGranted:
		r.State, r.Reason = StateNeedsAttention, reason
	case StateAwaitingGrant:
		r.State, r.Reason = StateNeedsAttention, ReasonFactsUnmet
	}
	return tx.SaveReconciliation(ctx, &r)
}

func applySubscription(ctx context.Context, tx StateTx, ev ProcessorEvent) (Outcome, error) {
	f := ev.Subscription
	s, found, err := tx.Subscription(ctx, f.ID)
	if err != nil {
		return "", err
	}
	if found && ev.Created < s.LastEventCreated {
		return OutcomeStale, nil
	}
	accountID, plan, err := resolve(ctx, tx, f.AccountID, f.PlanID, f.CustomerID, f.PriceID)
	if err != nil {
		return "", err
	}
	if !ValidUUID(accountID) {
		return attention(ctx, tx, ev, "", "", "", ReasonUnknownAccount)
	}
	if plan == nil {
		return attention(ctx, tx, ev, "", accountID, "", ReasonUnknownPlan)
	}
	before := s
	s.ProcessorSubscriptionID, s.AccountID, s.PlanID, s.Status = f.ID, accountID, plan.ID, f.Status
	s.CurrentPeriodEnd, s.LastEventCreated = f.CurrentPeriodEnd, ev.Created
	if ev.Type == EvSubscriptionDeleted {
		s.Status = SubCanceled
	}
	if err := tx.SaveSubscription(ctx, &s); err != nil {
		return "", err
	}
	live := func(st string) bool { return st == SubActive || st == SubTrialing }
	var typ string
	switch {
	case s.Status == SubCanceled && (!found || before.Status != SubCanceled):
		typ = TypeSubscriptionCanceled
	case s.Status == SubPastDue && (!found || before.Status != SubPastDue):
		typ = TypeSubscriptionPastDue
	case live(s.Status) && (!found || !live(before.Status)):
		typ = TypeSubscriptionStarted
	case found && (before.PlanID != s.PlanID || before.Status != s.Status || !sameTime(before.CurrentPeriodEnd, s.CurrentPeriodEnd)):
		typ = TypeSubscriptionUpdated
	default:
		return OutcomeApplied, nil
	}
	return OutcomeApplied, tx.Emit(ctx, subscriptionEvent(typ, ev, s))
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
