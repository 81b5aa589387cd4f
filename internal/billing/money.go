package billing

import (
	"context"
	"time"
)

// Payment statuses (billing.md §4).
const (
	PaymentSucceeded         = "succeeded"
	PaymentFailed            = "failed"
	PaymentRefunded          = "refunded"
	PaymentPartiallyRefunded = "partially_refunded"
	PaymentDisputed          = "disputed"
)

// Payment kinds: a one-time checkout or an invoice of a subscription.
const (
	KindCheckout = "checkout"
	KindInvoice  = "invoice"
)

// Payment is money the processor took, or tried to. AccountID and PlanID
// are empty when the event named no known account or plan.
type Payment struct {
	ID                 string
	ProcessorPaymentID string
	AccountID          string
	PlanID             string
	Kind               string
	Amount             int64
	AmountRefunded     int64
	Currency           string
	Status             string
	Email              string
	CheckoutSessionID  string
	InvoiceID          string
	SubscriptionID     string
	// PaymentIntentID is an invoice payment's PaymentIntent, which its
	// charge (and so a refund) names; "" for a checkout's, whose
	// ProcessorPaymentID is the PaymentIntent.
	PaymentIntentID  string
	LastEventCreated int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Subscription statuses are the processor's (active, trialing, past_due,
// canceled, unpaid, incomplete, incomplete_expired, paused).
const (
	SubActive   = "active"
	SubTrialing = "trialing"
	SubPastDue  = "past_due"
	SubCanceled = "canceled"
)

// Subscription is an account's subscription, keyed by the processor's id.
type Subscription struct {
	ID                      string
	ProcessorSubscriptionID string
	AccountID               string
	PlanID                  string
	Status                  string
	CurrentPeriodEnd        *time.Time
	LastEventCreated        int64
	CreatedAt               time.Time
	UpdatedAt               time.Time
}

// Invoice is a finalized invoice with the processor's hosted page and PDF.
type Invoice struct {
	ID                 string
	ProcessorInvoiceID string
	AccountID          string
	SubscriptionID     string
	AmountDue          int64
	Currency           string
	Status             string
	HostedURL          string
	PDFURL             string
	CreatedAt          time.Time
}

// Reconciliation states (billing.md §5).
const (
	StateAwaitingGrant  = "awaiting_grant"
	StateGranted        = "granted"
	StateNeedsAttention = "needs_attention"
	StateRevoked        = "revoked"
)

// Reasons a reconciliation item needs a person.
const (
	ReasonUnknownAccount  = "unknown_account"
	ReasonUnknownPlan     = "unknown_plan"
	ReasonNotASale        = "not_a_sale"
	ReasonFactsUnmet      = "facts_unmet"
	ReasonRevokeRefunded  = "revoke_refunded"
	ReasonRevokeDisputed  = "revoke_disputed"
	ReasonAlreadyEntitled = "already_entitled"
)

// Facts are the four facts of entitlements.md §1, checked when the item
// opens (settled is checked again at grant time).
type Facts struct {
	// Amount: one-time and equal to the plan's price.
	AmountMatches bool `json:"amount_matches"`
	OneTime       bool `json:"one_time"`
	// Product: what the plan grants.
	Products []string `json:"products"`
	// Status: paid and settled, not refunded, not disputed.
	Settled bool `json:"settled"`
	// Buyer: a team account whose owner or admin bought, with the payment's
	// email beside the buyer's.
	TeamAccount  bool   `json:"team_account"`
	BuyerRole    string `json:"buyer_role"`
	BuyerEmail   string `json:"buyer_email"`
	PaymentEmail string `json:"payment_email"`
}

// AllMet reports whether every fact holds.
func (f Facts) AllMet() bool {
	return f.AmountMatches && f.OneTime && len(f.Products) > 0 && f.Settled && f.TeamAccount &&
		(f.BuyerRole == "owner" || f.BuyerRole == "admin")
}

// Reconciliation is one inbox item: a settled payment awaiting a person's
// grant, or an event that needs one.
type Reconciliation struct {
	ID               string
	PaymentID        string
	ProcessorEventID string
	AccountID        string
	PlanID           string
	State            string
	Reason           string
	Facts            Facts
	EntitlementIDs   []int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// CheckoutLookup is what StateTx.CheckoutLookup found: Plan and Checkout
// are nil when there is none.
type CheckoutLookup struct {
	PaymentRecorded bool
	Plan            *Plan
	Checkout        *Checkout
}

// StateTx is the state one processor event may change, inside the
// transaction that records the event (Store.Apply).
type StateTx interface {
	Now() time.Time
	// QueueMail queues a mail to courier with the state change.
	QueueMail(ctx context.Context, m Mail) error
	// AccountEmail is the address of the account's customer ("" for an
	// account that never checked out).
	AccountEmail(ctx context.Context, accountID string) (string, error)
	PlanByID(ctx context.Context, id string) (Plan, bool, error)
	PlanByPrice(ctx context.Context, priceID string) (Plan, bool, error)
	CustomerByProcessor(ctx context.Context, processorCustomerID string) (Customer, bool, error)
	// CheckoutLookup reads together what a completed checkout needs:
	// whether its payment is recorded, the plan it names, and the
	// checkout billing opened for its session.
	CheckoutLookup(ctx context.Context, processorPaymentID, planID, sessionID string) (CheckoutLookup, error)
	Payment(ctx context.Context, processorPaymentID string) (Payment, bool, error)
	// SavePayment inserts p (its ID empty) or updates the row with its ID.
	SavePayment(ctx context.Context, p *Payment) error
	// PaymentOfCharge finds the payment a charge settled: by its
	// PaymentIntent (a checkout's payment id, or an invoice's recorded
	// PaymentIntent), else by its invoice.
	PaymentOfCharge(ctx context.Context, paymentIntentID, invoiceID string) (Payment, bool, error)
	Subscription(ctx context.Context, processorID string) (Subscription, bool, error)
	SaveSubscription(ctx context.Context, s *Subscription) error
	// SaveInvoice inserts inv unless the processor's invoice is stored
	// (created false, inv filled from the row).
	SaveInvoice(ctx context.Context, inv *Invoice) (bool, error)
	ReconciliationOf(ctx context.Context, paymentID string) (Reconciliation, bool, error)
	SaveReconciliation(ctx context.Context, r *Reconciliation) error
	Emit(ctx context.Context, events ...Event) error
}
