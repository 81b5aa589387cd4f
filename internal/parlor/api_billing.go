package parlor

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The shapes and calls of billing (plans, checkout, money state, the
// reconciliation inbox), as the gateway routes them.

// BillingPlan is something to buy.
type BillingPlan struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Products     []string `json:"products"`
	Amount       int64    `json:"amount"`
	Currency     string   `json:"currency"`
	Interval     string   `json:"interval"`
	TrialDays    int      `json:"trial_days"`
	VersionRange *string  `json:"version_range"`
	Meter        *string  `json:"meter"`
	Active       bool     `json:"active"`
}

// Price is the plan's price in words: "120.00 USD once".
func (p BillingPlan) Price() string {
	s := Money(p.Amount, p.Currency)
	switch p.Interval {
	case "once":
		return s + " once"
	case "month", "year":
		s += " a " + p.Interval
		if p.Meter != nil {
			s += " per " + strings.ReplaceAll(*p.Meter, "_", " ")
		}
		return s
	}
	return s
}

// Money writes an amount of minor units: "120.00 USD" ("500 JPY" for a
// currency without minor units).
func Money(amount int64, currency string) string {
	cur := strings.ToUpper(currency)
	switch currency {
	case "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf":
		return strconv.FormatInt(amount, 10) + " " + cur
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, cur)
}

// BillingPayment is a payment as billing records it.
type BillingPayment struct {
	ID                 string    `json:"id"`
	AccountID          *string   `json:"account_id"`
	PlanID             *string   `json:"plan_id"`
	Kind               string    `json:"kind"`
	Amount             int64     `json:"amount"`
	AmountRefunded     int64     `json:"amount_refunded"`
	Currency           string    `json:"currency"`
	Status             string    `json:"status"`
	Email              string    `json:"email"`
	ProcessorPaymentID string    `json:"processor_payment_id"`
	CreatedAt          time.Time `json:"created_at"`
}

// Paid is the payment's amount in words.
func (p BillingPayment) Paid() string { return Money(p.Amount, p.Currency) }

// BillingSubscription is a subscription at the processor.
type BillingSubscription struct {
	ID               string     `json:"id"`
	PlanID           string     `json:"plan_id"`
	Status           string     `json:"status"`
	CurrentPeriodEnd *time.Time `json:"current_period_end"`
}

// BillingInvoice is a finalized invoice with the processor's pages.
type BillingInvoice struct {
	ID                 string    `json:"id"`
	ProcessorInvoiceID string    `json:"processor_invoice_id"`
	AmountDue          int64     `json:"amount_due"`
	Currency           string    `json:"currency"`
	Status             string    `json:"status"`
	HostedInvoiceURL   *string   `json:"hosted_invoice_url"`
	InvoicePDF         *string   `json:"invoice_pdf"`
	CreatedAt          time.Time `json:"created_at"`
}

// Due is the invoice's amount in words.
func (i BillingInvoice) Due() string { return Money(i.AmountDue, i.Currency) }

// MoneyState is an account's billing page.
type MoneyState struct {
	Subscriptions []BillingSubscription `json:"subscriptions"`
	Payments      []BillingPayment      `json:"payments"`
	Invoices      []BillingInvoice      `json:"invoices"`
}

// Facts are the four facts of the grant procedure, as billing checked them.
type Facts struct {
	AmountMatches bool     `json:"amount_matches"`
	OneTime       bool     `json:"one_time"`
	Products      []string `json:"products"`
	Settled       bool     `json:"settled"`
	TeamAccount   bool     `json:"team_account"`
	BuyerRole     string   `json:"buyer_role"`
	BuyerEmail    string   `json:"buyer_email"`
	PaymentEmail  string   `json:"payment_email"`
}

// Reconciliation is an inbox item.
type Reconciliation struct {
	ID             string          `json:"id"`
	State          string          `json:"state"`
	Reason         string          `json:"reason"`
	AccountID      *string         `json:"account_id"`
	Facts          Facts           `json:"facts"`
	EntitlementIDs []int64         `json:"entitlement_ids"`
	Payment        *BillingPayment `json:"payment"`
	Plan           *BillingPlan    `json:"plan"`
	CreatedAt      time.Time       `json:"created_at"`
}

// Plans lists the storefront's plans (public).
func (c *Client) Plans(ctx context.Context) ([]BillingPlan, error) {
	var out struct {
		Plans []BillingPlan `json:"plans"`
	}
	err := c.do(ctx, "", "GET", "/v1/plans", nil, &out)
	return out.Plans, err
}

// OperatorPlans lists every plan, inactive ones too (staff).
func (c *Client) OperatorPlans(ctx context.Context, token string) ([]BillingPlan, error) {
	var out struct {
		Plans []BillingPlan `json:"plans"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/plans", nil, &out)
	return out.Plans, err
}

// CreatePlan creates a plan (staff); body is billing's plan body.
func (c *Client) CreatePlan(ctx context.Context, token string, body map[string]any) (BillingPlan, error) {
	var out struct {
		Plan BillingPlan `json:"plan"`
	}
	err := c.do(ctx, token, "POST", "/v1/operator/plans", body, &out)
	return out.Plan, err
}

// UpdatePlan changes a plan (staff): the fields body names.
func (c *Client) UpdatePlan(ctx context.Context, token, id string, body map[string]any) (BillingPlan, error) {
	var out struct {
		Plan BillingPlan `json:"plan"`
	}
	err := c.do(ctx, token, "PATCH", "/v1/operator/plans/"+url.PathEscape(id), body, &out)
	return out.Plan, err
}

// AccountBilling reads the account's money state (members).
func (c *Client) AccountBilling(ctx context.Context, token, id string) (MoneyState, error) {
	var out MoneyState
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/billing", nil, &out)
	return out, err
}

// Checkout starts a checkout of plan for the account; it answers where to
// send the buyer.
func (c *Client) Checkout(ctx context.Context, token, id, planID string) (string, error) {
	var out struct {
		Checkout struct {
			URL string `json:"url"`
		} `json:"checkout"`
	}
	err := c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/checkout", map[string]string{"plan_id": planID}, &out)
	return out.Checkout.URL, err
}

// Reconciliations lists the inbox in state (staff).
func (c *Client) Reconciliations(ctx context.Context, token, state string) ([]Reconciliation, error) {
	var out struct {
		Reconciliations []Reconciliation `json:"reconciliations"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/reconciliations?state="+url.QueryEscape(state), nil, &out)
	return out.Reconciliations, err
}

// ReconciliationAction grants ("grant") or revokes ("revoke") an item
// through box with the caller's token.
func (c *Client) ReconciliationAction(ctx context.Context, token, id, action string) error {
	return c.do(ctx, token, "POST", "/v1/operator/reconciliations/"+url.PathEscape(id)+"/"+action, nil, nil)
}
