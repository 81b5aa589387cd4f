// Package stripeproc is billing's Stripe adapter: billing.Processor through
// stripe-go (customers, prices, Checkout Sessions), and Parse, which
// verifies a webhook's signature with stripe-go's webhook package and
// normalises Stripe's event shapes into billing.ProcessorEvent. The test
// processor (testproc) posts the same shapes, signed the same way, so
// development runs this very code.
package stripeproc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/observe"
)

// Options configure a Client.
type Options struct {
	// SecretKey is the API key (sk_…); it is sent to Stripe only, never
	// logged.
	SecretKey string
	// APIURL replaces Stripe's API base (tests point it at stripe-mock).
	APIURL string
	// Timeout bounds each call (10s when zero).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Client is billing.Processor over Stripe's API.
type Client struct {
	sc     *stripe.Client
	logger *slog.Logger
}

var _ billing.Processor = (*Client)(nil)

// New returns a Stripe client.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: o.Timeout, Transport: observe.Transport(http.DefaultTransport.(*http.Transport).Clone())},
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(1),
	}
	if o.APIURL != "" {
		cfg.URL = stripe.String(strings.TrimRight(o.APIURL, "/"))
	}
	return &Client{sc: stripe.NewClient(o.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))), logger: o.Logger}
}

// unavailable logs the failure class (Stripe's error type and code, never
// the key) and answers billing's unavailable.
func (c *Client) unavailable(ctx context.Context, call string, err error) error {
	attrs := []any{"call", call}
	var se *stripe.Error
	if errors.As(err, &se) {
		attrs = append(attrs, "type", string(se.Type), "code", string(se.Code), "status", se.HTTPStatusCode)
	} else {
		attrs = append(attrs, "class", "transport")
	}
	c.logger.WarnContext(ctx, "payment processor call failed", attrs...)
	return errs.New(billing.CodeUnavailable, "payment processor unavailable")
}

// CreateCustomer implements billing.Processor.
func (c *Client) CreateCustomer(ctx context.Context, s billing.CustomerSpec) (string, error) {
	p := &stripe.CustomerCreateParams{Metadata: map[string]string{"account_id": s.AccountID}}
	if s.Email != "" {
		p.Email = stripe.String(s.Email)
	}
	if s.IdempotencyKey != "" {
		p.SetIdempotencyKey(s.IdempotencyKey)
	}
	cust, err := c.sc.V1Customers.Create(ctx, p)
	if err != nil || cust.ID == "" {
		return "", c.unavailable(ctx, "customers.create", err)
	}
	return cust.ID, nil
}

// CreatePrice implements billing.Processor: a price with its product made
// inline, named after the plan and carrying its id.
func (c *Client) CreatePrice(ctx context.Context, pl billing.Plan) (string, error) {
	p := &stripe.PriceCreateParams{
		Currency:    stripe.String(pl.Currency),
		UnitAmount:  stripe.Int64(pl.Amount),
		ProductData: &stripe.PriceCreateProductDataParams{Name: stripe.String(pl.Name), Metadata: map[string]string{"plan_id": pl.ID}},
		Metadata:    map[string]string{"plan_id": pl.ID},
	}
	if pl.Interval != billing.IntervalOnce {
		p.Recurring = &stripe.PriceCreateRecurringParams{Interval: stripe.String(pl.Interval)}
	}
	if pl.Meter != nil {
		meter, err := c.meter(ctx, *pl.Meter)
		if err != nil {
			return "", err
		}
		p.Recurring.UsageType = stripe.String(string(stripe.PriceRecurringUsageTypeMetered))
		p.Recurring.Meter = stripe.String(meter)
	}
	price, err := c.sc.V1Prices.Create(ctx, p)
	if err != nil || price.ID == "" {
		return "", c.unavailable(ctx, "prices.create", err)
	}
	return price.ID, nil
}

// CreateCheckout implements billing.Processor.
func (c *Client) CreateCheckout(ctx context.Context, s billing.CheckoutSpec) (billing.ProcessorCheckout, error) {
	meta := map[string]string{"account_id": s.AccountID, "plan_id": s.PlanID, "user_id": s.UserID}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(s.Mode),
		Customer:          stripe.String(s.CustomerID),
		ClientReferenceID: stripe.String(s.AccountID),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(s.PriceID)}},
		SuccessURL:        stripe.String(s.SuccessURL),
		CancelURL:         stripe.String(s.CancelURL),
		Metadata:          meta,
	}
	if !s.Metered {
		// A metered price is billed by its meter events, never a quantity.
		p.LineItems[0].Quantity = stripe.Int64(1)
	}
	if s.Mode == billing.ModePayment {
		p.PaymentIntentData = &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta}
	} else {
		p.SubscriptionData = &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: meta}
		if s.TrialDays > 0 {
			p.SubscriptionData.TrialPeriodDays = stripe.Int64(int64(s.TrialDays))
		}
	}
	if s.IdempotencyKey != "" {
		p.SetIdempotencyKey("checkout-" + s.AccountID + "-" + s.IdempotencyKey)
	}
	sess, err := c.sc.V1CheckoutSessions.Create(ctx, p)
	if err != nil || sess.ID == "" || sess.URL == "" {
		return billing.ProcessorCheckout{}, c.unavailable(ctx, "checkout.sessions.create", err)
	}
	return billing.ProcessorCheckout{ID: sess.ID, URL: sess.URL, ExpiresAt: time.Unix(sess.ExpiresAt, 0).UTC()}, nil
}

// meter returns the id of the active billing meter whose event name is
// metric, making it (summing each event's value per customer) when there
// is none.
func (c *Client) meter(ctx context.Context, metric string) (string, error) {
	for m, err := range c.sc.V1BillingMeters.List(ctx, &stripe.BillingMeterListParams{Status: stripe.String("active")}) {
		if err != nil {
			return "", c.unavailable(ctx, "billing.meters.list", err)
		}
		if m.EventName == metric {
			return m.ID, nil
		}
	}
	p := &stripe.BillingMeterCreateParams{
		DisplayName:        stripe.String(metric),
		EventName:          stripe.String(metric),
		DefaultAggregation: &stripe.BillingMeterCreateDefaultAggregationParams{Formula: stripe.String("sum")},
	}
	p.SetIdempotencyKey("meter-" + metric)
	m, err := c.sc.V1BillingMeters.Create(ctx, p)
	if err != nil || m.ID == "" {
		return "", c.unavailable(ctx, "billing.meters.create", err)
	}
	return m.ID, nil
}

// ReportUsage implements billing.Processor: a meter event whose identifier
// is the usage id, so Stripe counts a retried report once.
func (c *Client) ReportUsage(ctx context.Context, e billing.MeterEvent) error {
	p := &stripe.BillingMeterEventCreateParams{
		EventName:  stripe.String(e.EventName),
		Identifier: stripe.String(e.Identifier),
		Payload:    map[string]string{"stripe_customer_id": e.CustomerID, "value": strconv.FormatInt(e.Value, 10)},
		Timestamp:  stripe.Int64(e.Timestamp.Unix()),
	}
	p.SetIdempotencyKey("meter-event-" + e.Identifier)
	if _, err := c.sc.V1BillingMeterEvents.Create(ctx, p); err != nil {
		return c.unavailable(ctx, "billing.meter_events.create", err)
	}
	return nil
}

// Refund implements billing.Processor.
func (c *Client) Refund(ctx context.Context, r billing.RefundSpec) (string, error) {
	p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.PaymentIntentID), Amount: stripe.Int64(r.Amount)}
	if r.IdempotencyKey != "" {
		p.SetIdempotencyKey(r.IdempotencyKey)
	}
	re, err := c.sc.V1Refunds.Create(ctx, p)
	if err != nil || re.ID == "" {
		return "", c.unavailable(ctx, "refunds.create", err)
	}
	return re.ID, nil
}

// ErrSignature is a webhook whose signature is missing, bad or stale.
var ErrSignature = errors.New("invalid webhook signature")

// Parse verifies payload against the Stripe-Signature header with secret
// (a 5-minute tolerance) and normalises the event. A bad, missing or stale
// signature is ErrSignature; a well-signed body that is not an event is a
// validation error.
func Parse(payload []byte, header, secret string) (billing.ProcessorEvent, error) {
	ev, err := webhook.ConstructEventWithOptions(payload, header, secret, webhook.ConstructEventOptions{
		Tolerance: billing.WebhookTolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || strings.Contains(err.Error(), "failed to parse webhook body json") {
			return billing.ProcessorEvent{}, errs.New(billing.CodeValidation, "the webhook body is not a Stripe event")
		}
		return billing.ProcessorEvent{}, ErrSignature
	}
	return Normalize(ev)
}

func badEvent(what string) error {
	return errs.New(billing.CodeValidation, "the webhook event's object is malformed: "+what)
}

// Normalize maps a verified Stripe event to billing's shape.
func Normalize(ev stripe.Event) (billing.ProcessorEvent, error) {
	out := billing.ProcessorEvent{ID: ev.ID, Type: string(ev.Type), Created: ev.Created}
	if ev.ID == "" || len(ev.ID) > 255 || ev.Type == "" {
		return out, badEvent("id and type are required")
	}
	var raw json.RawMessage
	if ev.Data != nil {
		raw = ev.Data.Raw
	}
	decode := func(dst any) error {
		if len(raw) == 0 || json.Unmarshal(raw, dst) != nil {
			return badEvent(string(ev.Type))
		}
		return nil
	}
	switch out.Type {
	case billing.EvCheckoutCompleted:
		var s stripe.CheckoutSession
		if err := decode(&s); err != nil {
			return out, err
		}
		cp := &billing.CheckoutPaid{SessionID: s.ID, Mode: string(s.Mode), PaymentStatus: string(s.PaymentStatus),
			AccountID: s.ClientReferenceID, PlanID: s.Metadata["plan_id"], UserID: s.Metadata["user_id"],
			Amount: s.AmountTotal, Currency: string(s.Currency)}
		if cp.AccountID == "" {
			cp.AccountID = s.Metadata["account_id"]
		}
		if s.PaymentIntent != nil {
			cp.PaymentID = s.PaymentIntent.ID
		}
		if s.Customer != nil {
			cp.CustomerID = s.Customer.ID
		}
		if s.CustomerDetails != nil {
			cp.Email = s.CustomerDetails.Email
		}
		out.Checkout = cp
	case billing.EvInvoiceFinalized, billing.EvInvoicePaid, billing.EvInvoicePaymentFailed:
		var inv stripe.Invoice
		if err := decode(&inv); err != nil {
			return out, err
		}
		f := &billing.InvoiceFact{ID: inv.ID, AmountDue: inv.AmountDue, AmountPaid: inv.AmountPaid, Currency: string(inv.Currency),
			Status: string(inv.Status), HostedURL: inv.HostedInvoiceURL, PDFURL: inv.InvoicePDF, Email: inv.CustomerEmail}
		if inv.Customer != nil {
			f.CustomerID = inv.Customer.ID
		}
		if inv.Parent != nil && inv.Parent.SubscriptionDetails != nil {
			d := inv.Parent.SubscriptionDetails
			if d.Subscription != nil {
				f.SubscriptionID = d.Subscription.ID
			}
			f.AccountID, f.PlanID = d.Metadata["account_id"], d.Metadata["plan_id"]
		}
		if inv.Lines != nil {
			for _, l := range inv.Lines.Data {
				if l != nil && l.Pricing != nil && l.Pricing.PriceDetails != nil && l.Pricing.PriceDetails.Price != "" {
					f.PriceID = l.Pricing.PriceDetails.Price
					break
				}
			}
		}
		if inv.Payments != nil {
			for _, ip := range inv.Payments.Data {
				if ip != nil && ip.Payment != nil && ip.Payment.PaymentIntent != nil && ip.Payment.PaymentIntent.ID != "" {
					f.PaymentIntentID = ip.Payment.PaymentIntent.ID
					break
				}
			}
		}
		out.Invoice = f
	case billing.EvPaymentIntentFailed:
		var pi stripe.PaymentIntent
		if err := decode(&pi); err != nil {
			return out, err
		}
		f := &billing.PaymentFailure{PaymentID: pi.ID, AccountID: pi.Metadata["account_id"], PlanID: pi.Metadata["plan_id"],
			Amount: pi.Amount, Currency: string(pi.Currency)}
		if pi.Customer != nil {
			f.CustomerID = pi.Customer.ID
		}
		if pi.LastPaymentError != nil {
			f.Reason = string(pi.LastPaymentError.Code)
			if pi.LastPaymentError.DeclineCode != "" {
				f.Reason = string(pi.LastPaymentError.DeclineCode)
			}
		}
		out.Failure = f
	case billing.EvChargeRefunded:
		var ch stripe.Charge
		if err := decode(&ch); err != nil {
			return out, err
		}
		f := &billing.ChargeFact{Amount: ch.Amount, AmountRefunded: ch.AmountRefunded, Currency: string(ch.Currency)}
		if ch.PaymentIntent != nil {
			f.PaymentID = ch.PaymentIntent.ID
		}
		// API versions before 2025-03-31 name the charge's invoice on it;
		// later ones only through the invoice's payments (InvoiceFact).
		var older struct {
			Invoice json.RawMessage `json:"invoice"`
		}
		if json.Unmarshal(raw, &older) == nil && len(older.Invoice) > 0 {
			var id string
			if json.Unmarshal(older.Invoice, &id) != nil {
				var obj struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(older.Invoice, &obj)
				id = obj.ID
			}
			f.InvoiceID = id
		}
		out.Charge = f
	case billing.EvDisputeCreated:
		var d stripe.Dispute
		if err := decode(&d); err != nil {
			return out, err
		}
		f := &billing.DisputeFact{Amount: d.Amount, Currency: string(d.Currency)}
		if d.PaymentIntent != nil {
			f.PaymentID = d.PaymentIntent.ID
		}
		out.Dispute = f
	case billing.EvSubscriptionCreated, billing.EvSubscriptionUpdated, billing.EvSubscriptionDeleted:
		var s stripe.Subscription
		if err := decode(&s); err != nil {
			return out, err
		}
		f := &billing.SubscriptionFact{ID: s.ID, Status: string(s.Status), AccountID: s.Metadata["account_id"], PlanID: s.Metadata["plan_id"]}
		if s.Customer != nil {
			f.CustomerID = s.Customer.ID
		}
		if s.Items != nil && len(s.Items.Data) > 0 && s.Items.Data[0] != nil {
			it := s.Items.Data[0]
			if it.Price != nil {
				f.PriceID = it.Price.ID
			}
			if it.CurrentPeriodEnd > 0 {
				t := time.Unix(it.CurrentPeriodEnd, 0).UTC()
				f.CurrentPeriodEnd = &t
			}
		}
		out.Subscription = f
	}
	return out, nil
}

// Sign returns the Stripe-Signature header of payload at t with secret,
// in Stripe's scheme (the test processor signs what it posts with it).
func Sign(payload []byte, secret string, t time.Time) string {
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + hex.EncodeToString(webhook.ComputeSignature(t, payload, secret))
}
