package billing

import (
	"time"

	"github.com/platformco/platform/internal/ids"
)

// The billing.* types (platform.md's catalogue; billing.usage.recorded is
// in usage.go).
const (
	TypePlanCreated          = "billing.plan.created"
	TypePlanUpdated          = "billing.plan.updated"
	TypeCustomerCreated      = "billing.customer.created"
	TypeSubscriptionStarted  = "billing.subscription.started"
	TypeSubscriptionUpdated  = "billing.subscription.updated"
	TypeSubscriptionCanceled = "billing.subscription.canceled"
	TypeSubscriptionPastDue  = "billing.subscription.past_due"
	TypePaymentSucceeded     = "billing.payment.succeeded"
	TypePaymentFailed        = "billing.payment.failed"
	TypePaymentRefunded      = "billing.payment.refunded"
	TypeInvoiceCreated       = "billing.invoice.created"
)

// EventTypes lists every type billing emits.
func EventTypes() []string {
	return []string{TypePlanCreated, TypePlanUpdated, TypeCustomerCreated, TypeSubscriptionStarted,
		TypeSubscriptionUpdated, TypeSubscriptionCanceled, TypeSubscriptionPastDue, TypePaymentSucceeded,
		TypePaymentFailed, TypePaymentRefunded, TypeInvoiceCreated, TypeUsageRecorded}
}

// ValidUUID reports whether s is a canonical (lower-case) UUID.
func ValidUUID(s string) bool { return ids.Valid(s) }

// PlanData is the data of billing.plan.created and .updated.
type PlanData struct {
	PlanID       string   `json:"plan_id"`
	Name         string   `json:"name"`
	Products     []string `json:"products"`
	Amount       int64    `json:"amount"`
	Currency     string   `json:"currency"`
	Interval     string   `json:"interval"`
	TrialDays    int      `json:"trial_days"`
	VersionRange *string  `json:"version_range"`
	Active       bool     `json:"active"`
}

// PlanEvent is a plan's created or updated event.
func PlanEvent(typ string, p Plan) Event {
	return Event{Type: typ, Subject: p.ID, Data: PlanData{PlanID: p.ID, Name: p.Name, Products: p.Products, Amount: p.Amount,
		Currency: p.Currency, Interval: p.Interval, TrialDays: p.TrialDays, VersionRange: p.VersionRange, Active: p.Active}}
}

// CustomerData is billing.customer.created's data; metadata is open.
type CustomerData struct {
	CustomerID          string            `json:"customer_id"`
	AccountID           string            `json:"account_id"`
	Processor           string            `json:"processor"`
	ProcessorCustomerID string            `json:"processor_customer_id"`
	Metadata            map[string]string `json:"metadata"`
}

// CustomerEvent is billing.customer.created.
func CustomerEvent(c Customer) Event {
	return Event{Type: TypeCustomerCreated, Subject: c.ID, Data: CustomerData{CustomerID: c.ID, AccountID: c.AccountID,
		Processor: ProcessorStripe, ProcessorCustomerID: c.ProcessorCustomerID, Metadata: map[string]string{"account_id": c.AccountID}}}
}

// SubscriptionData is the data of the four subscription types: plan_id and
// account_id as bare UUIDs (billing.md §4).
type SubscriptionData struct {
	SubscriptionID   string  `json:"processor_subscription_id"`
	AccountID        string  `json:"account_id"`
	PlanID           string  `json:"plan_id"`
	Status           string  `json:"status"`
	CurrentPeriodEnd *string `json:"current_period_end"`
	Processor        string  `json:"processor"`
	ProcessorEventID string  `json:"processor_event_id"`
}

func subscriptionEvent(typ string, ev ProcessorEvent, s Subscription) Event {
	d := SubscriptionData{SubscriptionID: s.ProcessorSubscriptionID, AccountID: s.AccountID, PlanID: s.PlanID, Status: s.Status,
		Processor: ProcessorStripe, ProcessorEventID: ev.ID}
	if s.CurrentPeriodEnd != nil {
		t := s.CurrentPeriodEnd.UTC().Format(time.RFC3339)
		d.CurrentPeriodEnd = &t
	}
	return Event{Type: typ, Subject: s.ProcessorSubscriptionID, Data: d}
}

// PaymentCheckoutData is billing.payment.succeeded of a one-time checkout.
type PaymentCheckoutData struct {
	PaymentID          string `json:"payment_id"`
	AccountID          string `json:"account_id"`
	PlanID             string `json:"plan_id"`
	CheckoutSessionID  string `json:"processor_checkout_session_id"`
	Amount             int64  `json:"amount"`
	Currency           string `json:"currency"`
	Processor          string `json:"processor"`
	ProcessorEventID   string `json:"processor_event_id"`
	ProcessorPaymentID string `json:"processor_payment_id"`
}

// PaymentInvoiceData is billing.payment.succeeded of an invoice.
type PaymentInvoiceData struct {
	PaymentID          string  `json:"payment_id"`
	AccountID          string  `json:"account_id"`
	InvoiceID          string  `json:"processor_invoice_id"`
	SubscriptionID     *string `json:"processor_subscription_id"`
	Amount             int64   `json:"amount"`
	Currency           string  `json:"currency"`
	Processor          string  `json:"processor"`
	ProcessorEventID   string  `json:"processor_event_id"`
	ProcessorPaymentID string  `json:"processor_payment_id"`
}

func paymentSucceededCheckout(ev ProcessorEvent, p Payment) Event {
	return Event{Type: TypePaymentSucceeded, Subject: p.ID, Data: PaymentCheckoutData{PaymentID: p.ID, AccountID: p.AccountID,
		PlanID: p.PlanID, CheckoutSessionID: p.CheckoutSessionID, Amount: p.Amount, Currency: p.Currency,
		Processor: ProcessorStripe, ProcessorEventID: ev.ID, ProcessorPaymentID: p.ProcessorPaymentID}}
}

func paymentSucceededInvoice(ev ProcessorEvent, p Payment) Event {
	return Event{Type: TypePaymentSucceeded, Subject: p.ID, Data: PaymentInvoiceData{PaymentID: p.ID, AccountID: p.AccountID,
		InvoiceID: p.InvoiceID, SubscriptionID: optional(p.SubscriptionID), Amount: p.Amount, Currency: p.Currency,
		Processor: ProcessorStripe, ProcessorEventID: ev.ID, ProcessorPaymentID: p.ProcessorPaymentID}}
}

// PaymentFailedData is billing.payment.failed: amount is what could not be
// collected.
type PaymentFailedData struct {
	PaymentID          string `json:"payment_id"`
	AccountID          string `json:"account_id"`
	Amount             int64  `json:"amount"`
	Currency           string `json:"currency"`
	Reason             string `json:"reason"`
	Processor          string `json:"processor"`
	ProcessorEventID   string `json:"processor_event_id"`
	ProcessorPaymentID string `json:"processor_payment_id"`
}

func paymentFailed(ev ProcessorEvent, p Payment, reason string) Event {
	if reason == "" {
		reason = "payment_failed"
	}
	return Event{Type: TypePaymentFailed, Subject: p.ID, Data: PaymentFailedData{PaymentID: p.ID, AccountID: p.AccountID,
		Amount: p.Amount, Currency: p.Currency, Reason: truncate(reason, 200), Processor: ProcessorStripe, ProcessorEventID: ev.ID,
		ProcessorPaymentID: p.ProcessorPaymentID}}
}

// PaymentRefundedData is billing.payment.refunded.
type PaymentRefundedData struct {
	PaymentID          string `json:"payment_id"`
	AccountID          string `json:"account_id"`
	Amount             int64  `json:"amount"`
	AmountRefunded     int64  `json:"amount_refunded"`
	Currency           string `json:"currency"`
	Status             string `json:"status"`
	Processor          string `json:"processor"`
	ProcessorEventID   string `json:"processor_event_id"`
	ProcessorPaymentID string `json:"processor_payment_id"`
}

func paymentRefunded(ev ProcessorEvent, p Payment) Event {
	return Event{Type: TypePaymentRefunded, Subject: p.ID, Data: PaymentRefundedData{PaymentID: p.ID, AccountID: p.AccountID,
		Amount: p.Amount, AmountRefunded: p.AmountRefunded, Currency: p.Currency, Status: p.Status, Processor: ProcessorStripe,
		ProcessorEventID: ev.ID, ProcessorPaymentID: p.ProcessorPaymentID}}
}

// InvoiceData is billing.invoice.created.
type InvoiceData struct {
	InvoiceID          string  `json:"invoice_id"`
	AccountID          string  `json:"account_id"`
	ProcessorInvoiceID string  `json:"processor_invoice_id"`
	SubscriptionID     *string `json:"processor_subscription_id"`
	AmountDue          int64   `json:"amount_due"`
	Currency           string  `json:"currency"`
	HostedInvoiceURL   *string `json:"hosted_invoice_url"`
	InvoicePDF         *string `json:"invoice_pdf"`
	Processor          string  `json:"processor"`
	ProcessorEventID   string  `json:"processor_event_id"`
}

func invoiceCreated(ev ProcessorEvent, inv Invoice) Event {
	return Event{Type: TypeInvoiceCreated, Subject: inv.ID, Data: InvoiceData{InvoiceID: inv.ID, AccountID: inv.AccountID,
		ProcessorInvoiceID: inv.ProcessorInvoiceID, SubscriptionID: optional(inv.SubscriptionID), AmountDue: inv.AmountDue,
		Currency: inv.Currency, HostedInvoiceURL: optional(inv.HostedURL), InvoicePDF: optional(inv.PDFURL),
		Processor: ProcessorStripe, ProcessorEventID: ev.ID}}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
