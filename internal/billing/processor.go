package billing

import (
	"context"
	"time"
)

// Processor is the payment processor's API as billing uses it: the Stripe
// adapter (stripeproc) in production, the test processor (testproc) in
// development, behind the same seam. Every method fails closed: an answer
// it cannot trust is an unavailable error.
type Processor interface {
	// CreateCustomer makes the account's customer; returns its id.
	CreateCustomer(ctx context.Context, c CustomerSpec) (string, error)
	// CreatePrice makes the plan's product (once) and a price; returns the
	// price id. A price change makes a new price.
	CreatePrice(ctx context.Context, p Plan) (string, error)
	// CreateCheckout makes a Checkout Session.
	CreateCheckout(ctx context.Context, c CheckoutSpec) (ProcessorCheckout, error)
	// ReportUsage sends a meter event; the processor counts one
	// Identifier once.
	ReportUsage(ctx context.Context, e MeterEvent) error
	// Refund returns part or all of a payment; returns the refund's id.
	// The processor then sends charge.refunded.
	Refund(ctx context.Context, r RefundSpec) (string, error)
}

// CustomerSpec is a customer to make at the processor.
type CustomerSpec struct {
	AccountID      string
	Email          string
	IdempotencyKey string
}

// Checkout modes.
const (
	ModePayment      = "payment"
	ModeSubscription = "subscription"
)

// CheckoutSpec is a Checkout Session to make: the account id goes as
// client_reference_id, Metadata is {account_id, plan_id, user_id}.
type CheckoutSpec struct {
	Mode       string
	CustomerID string
	PriceID    string
	Amount     int64
	Currency   string
	Interval   string
	AccountID  string
	PlanID     string
	UserID     string
	TrialDays  int
	// Metered is a plan billed by usage: its price takes no quantity.
	Metered        bool
	SuccessURL     string
	CancelURL      string
	IdempotencyKey string
}

// ProcessorCheckout is a session the processor made.
type ProcessorCheckout struct {
	ID        string
	URL       string
	ExpiresAt time.Time
}

// CheckoutMode is the session mode of a plan's interval.
func CheckoutMode(interval string) string {
	if interval == IntervalOnce {
		return ModePayment
	}
	return ModeSubscription
}
