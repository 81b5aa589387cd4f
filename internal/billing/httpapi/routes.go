// Package httpapi is billing's HTTP surface (billing.md): plans, checkout,
// the processor's webhook, the probes and the OpenAPI document.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/openapi"
)

// Deps are what billing's handlers need.
type Deps struct {
	// Service and Webhooks are nil while Waiting.
	Service  *billing.Service
	Webhooks *billing.Webhooks
	Inbox    *billing.Inbox
	// Meters is kicked when usage owes the processor a meter event; nil
	// leaves the relay to its poll.
	Meters *billing.MeterRelay
	// ServiceTokens admit platform services to POST /v1/usage
	// (BILLING_SERVICE_TOKENS); empty refuses every call.
	ServiceTokens ServiceTokens
	// Waiting is true until the database answers with a current schema:
	// every /v1 route answers 503.
	Waiting bool
	// WebhookSecret verifies the processor's signatures; never logged or
	// answered.
	WebhookSecret string
	// DevCheckout is the test processor's hosted checkout page; nil
	// outside development.
	DevCheckout http.Handler
	Ready       func(context.Context) httpx.Readiness
	Logger      *slog.Logger
}

// NewServer returns billing's handler.
func NewServer(d Deps) http.Handler {
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	e := errorsOf(d.Logger)
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /up", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	if d.DevCheckout != nil {
		mux.Handle("/dev/checkout/{id}", d.DevCheckout)
	}
	switch {
	case d.Service != nil:
		h := &handlers{svc: d.Service, hooks: d.Webhooks, inbox: d.Inbox, meters: d.Meters, tokens: d.ServiceTokens, secret: d.WebhookSecret, errs: e, logger: d.Logger}
		mux.HandleFunc("GET /v1/plans", h.plans)
		mux.HandleFunc("GET /v1/operator/plans", h.staffPlans)
		mux.HandleFunc("POST /v1/operator/plans", h.createPlan)
		mux.HandleFunc("PATCH /v1/operator/plans/{id}", h.updatePlan)
		mux.HandleFunc("POST /v1/accounts/{id}/checkout", h.checkout)
		mux.HandleFunc("POST /v1/webhooks/stripe", h.webhook)
		mux.HandleFunc("GET /v1/accounts/{id}/billing", h.accountBilling)
		mux.HandleFunc("GET /v1/operator/payments", h.staffPayments)
		mux.HandleFunc("GET /v1/operator/reconciliations", h.reconciliations)
		mux.HandleFunc("POST /v1/operator/reconciliations/{id}/grant", h.grant)
		mux.HandleFunc("POST /v1/operator/reconciliations/{id}/revoke", h.revoke)
		mux.HandleFunc("POST /v1/operator/payments/{id}/refund", h.refund)
		mux.HandleFunc("POST /v1/usage", h.recordUsage)
		mux.HandleFunc("GET /v1/accounts/{id}/usage", h.accountUsage)
	default:
		mux.HandleFunc("/v1/", e.Unavailable)
	}
	return httpx.Finish(mux, d.Logger, e.Writer())
}
