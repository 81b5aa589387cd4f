// Package billing is the billing service's domain (billing.md): plans,
// customers per identity account, checkout through a payment processor,
// the processor's webhook events mapped to money state, and the outbox
// events that record it. It holds no SQL and no HTTP; sqlstore and httpapi
// adapt it, and the processor adapters (stripeproc, testproc) implement
// Processor.
package billing

import (
	"context"
	"time"

	"github.com/platformco/platform/internal/products"
)

// Error codes billing answers with; httpapi maps each to one status.
const (
	CodeUnauthenticated  = "unauthenticated"   // 401
	CodeForbidden        = "forbidden"         // 403
	CodeNotFound         = "not_found"         // 404
	CodeConflict         = "conflict"          // 409
	CodeValidation       = "validation_failed" // 422
	CodePersonalAccount  = "personal_account"  // 422
	CodeInvalidSignature = "invalid_signature" // 400
	CodeTooLarge         = "payload_too_large" // 413
	CodeUnavailable      = "unavailable"       // 503
)

// Plan intervals.
const (
	IntervalOnce  = "once"
	IntervalMonth = "month"
	IntervalYear  = "year"
)

// ProcessorStripe is the processor every billing event names: the test
// processor speaks Stripe's shapes too.
const ProcessorStripe = "stripe"

// Sellable reports whether p is a product a plan may grant (kit is free and
// never sold: entitlements.md §1).
func Sellable(p string) bool { return products.Valid(p) && p != products.Kit }

// Plan is something to buy (billing.md §2). Amount is in minor units of
// Currency.
type Plan struct {
	ID           string
	Name         string
	Products     []string
	Amount       int64
	Currency     string
	Interval     string
	TrialDays    int
	VersionRange *string
	// Meter is the usage metric a recurring plan bills by (its processor
	// price is metered); nil for a flat plan.
	Meter            *string
	Active           bool
	ProcessorPriceID string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Customer is an identity account's customer at the processor.
type Customer struct {
	ID                  string
	AccountID           string
	ProcessorCustomerID string
	Email               string
	CreatedAt           time.Time
}

// Checkout is one Checkout Session made for an account.
type Checkout struct {
	ID                  string
	AccountID           string
	PlanID              string
	UserID              string
	BuyerRole           string
	BuyerEmail          string
	ProcessorCheckoutID string
	URL                 string
	ExpiresAt           time.Time
	CreatedAt           time.Time
}

// Event is one outbox row: its type, subject and data.
type Event struct {
	Type    string
	Subject string
	Data    any
}

// Store is billing's persistence; each state-changing method is one
// transaction with its outbox rows.
type Store interface {
	// CreatePlan stores p with its plan.created event. Errors: conflict.
	CreatePlan(ctx context.Context, p Plan) error
	// UpdatePlan reads the plan, lets change edit it, and stores the result
	// with its plan.updated event in one transaction (change returns false
	// when nothing changed: nothing is written). Errors: not_found.
	UpdatePlan(ctx context.Context, id string, change func(*Plan) (bool, error)) (Plan, error)
	// Plan reads one plan. Errors: not_found.
	Plan(ctx context.Context, id string) (Plan, error)
	// Plans lists plans oldest first; activeOnly drops inactive ones.
	Plans(ctx context.Context, activeOnly bool) ([]Plan, error)
	// Customer reads the account's customer. Errors: not_found.
	Customer(ctx context.Context, accountID string) (Customer, error)
	// CreateCustomer stores c with its customer.created event, or returns
	// the account's existing customer with created false.
	CreateCustomer(ctx context.Context, c Customer) (Customer, bool, error)
	// CreateCheckout stores c, or returns the checkout already stored for
	// the account under the same idempotency key (created false).
	CreateCheckout(ctx context.Context, c Checkout, idempotencyKey string) (Checkout, bool, error)
	// CheckoutByKey reads a checkout stored under (account, key).
	// Errors: not_found.
	CheckoutByKey(ctx context.Context, accountID, idempotencyKey string) (Checkout, error)
	// Apply records a processor event and, in the same transaction, runs
	// apply over the state it changes and writes the events it emits. An
	// event id already recorded returns duplicate true and runs nothing.
	Apply(ctx context.Context, ev ProcessorEvent, apply func(tx StateTx) (Outcome, error)) (duplicate bool, err error)
	UsageStore
}

// Identity answers who a bearer token belongs to (internal/identity/client
// implements it); every failure to get an answer is unavailable.
type Identity interface {
	OperatorMe(ctx context.Context, token string) (string, error)
	Account(ctx context.Context, token, accountID string) (Account, error)
	Me(ctx context.Context, token string) (User, error)
}

// Account is the caller's view of an identity account.
type Account struct {
	ID       string
	Role     string
	Personal bool
}

// User is the caller as identity names them.
type User struct {
	ID    string
	Email string
}
