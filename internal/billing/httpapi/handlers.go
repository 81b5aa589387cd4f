package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/stripeproc"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/service"
)

type handlers struct {
	svc    *billing.Service
	hooks  *billing.Webhooks
	inbox  *billing.Inbox
	meters *billing.MeterRelay
	tokens ServiceTokens
	secret string
	errs   service.Errors
	logger *slog.Logger
}

type planBody struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Products         []string  `json:"products"`
	Amount           int64     `json:"amount"`
	Currency         string    `json:"currency"`
	Interval         string    `json:"interval"`
	TrialDays        int       `json:"trial_days"`
	VersionRange     *string   `json:"version_range"`
	Meter            *string   `json:"meter"`
	Active           bool      `json:"active"`
	ProcessorPriceID string    `json:"processor_price_id"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func planOut(p billing.Plan) planBody {
	return planBody{p.ID, p.Name, p.Products, p.Amount, p.Currency, p.Interval, p.TrialDays, p.VersionRange, p.Meter, p.Active,
		p.ProcessorPriceID, p.CreatedAt.UTC(), p.UpdatedAt.UTC()}
}

func plansOut(ps []billing.Plan) map[string][]planBody {
	out := make([]planBody, len(ps))
	for i, p := range ps {
		out[i] = planOut(p)
	}
	return map[string][]planBody{"plans": out}
}

func (h *handlers) plans(w http.ResponseWriter, r *http.Request) {
	ps, err := h.svc.Plans(r.Context())
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	httpx.WriteJSON(w, http.StatusOK, plansOut(ps))
}

func (h *handlers) staffPlans(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	ps, err := h.svc.AllPlans(r.Context(), staff)
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, plansOut(ps))
}

type planRequest struct {
	Name         *string          `json:"name"`
	Products     *[]string        `json:"products"`
	Amount       *json.RawMessage `json:"amount"`
	Currency     *string          `json:"currency"`
	Interval     *string          `json:"interval"`
	TrialDays    *json.RawMessage `json:"trial_days"`
	VersionRange *string          `json:"version_range"`
	Meter        *string          `json:"meter"`
	Active       *bool            `json:"active"`
}

func (p planRequest) input() billing.PlanInput {
	return billing.PlanInput{Name: p.Name, Products: p.Products, Amount: raw(p.Amount), Currency: p.Currency, Interval: p.Interval,
		TrialDays: raw(p.TrialDays), VersionRange: p.VersionRange, Meter: p.Meter, Active: p.Active}
}

// raw is a JSON value's text, nil when absent.
func raw(m *json.RawMessage) *string {
	if m == nil {
		return nil
	}
	s := string(*m)
	return &s
}

func (h *handlers) createPlan(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	var body planRequest
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		h.errs.Write(w, r, err)
		return
	}
	p, err := h.svc.CreatePlan(r.Context(), staff, body.input())
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/operator/plans/"+p.ID)
	httpx.WriteJSON(w, http.StatusCreated, map[string]planBody{"plan": planOut(p)})
}

func (h *handlers) updatePlan(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	var body planRequest
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		h.errs.Write(w, r, err)
		return
	}
	p, err := h.svc.UpdatePlan(r.Context(), staff, r.PathValue("id"), body.input())
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]planBody{"plan": planOut(p)})
}

type checkoutBody struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (h *handlers) checkout(w http.ResponseWriter, r *http.Request) {
	var body struct {
		PlanID *string `json:"plan_id"`
	}
	if bearer(r) == "" {
		h.errs.Write(w, r, errs.New(billing.CodeUnauthenticated, "valid bearer token required"))
		return
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		h.errs.Write(w, r, err)
		return
	}
	planID := ""
	if body.PlanID != nil {
		planID = *body.PlanID
	}
	c, created, err := h.svc.Checkout(r.Context(), bearer(r), r.PathValue("id"), planID, r.Header.Get("Idempotency-Key"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, map[string]checkoutBody{"checkout": {ID: c.ID, URL: c.URL, ExpiresAt: c.ExpiresAt.UTC()}})
}

// webhook is POST /v1/webhooks/stripe: the body, at most 256 KiB, is
// verified as it arrived; the event is recorded and applied once, and 2xx
// only follows the commit, so a database failure is a 503 the processor
// retries.
func (h *handlers) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, billing.MaxWebhookBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.errs.Write(w, r, errs.New(billing.CodeTooLarge, "a webhook body must not exceed 256 KiB"))
		return
	case err != nil:
		h.errs.Write(w, r, &httpx.DecodeError{Status: http.StatusBadRequest, Code: "malformed_body", Message: "the body could not be read"})
		return
	}
	ev, err := stripeproc.Parse(body, r.Header.Get("Stripe-Signature"), h.secret)
	if errors.Is(err, stripeproc.ErrSignature) {
		h.logger.WarnContext(r.Context(), "webhook refused: bad, missing or stale signature")
		h.errs.Write(w, r, errs.New(billing.CodeInvalidSignature, "the Stripe-Signature header does not verify"))
		return
	}
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	duplicate, err := h.hooks.Apply(r.Context(), ev)
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"received": true, "duplicate": duplicate})
}
