package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

type endpointJSON struct {
	ID             string    `json:"id"`
	AccountID      string    `json:"account_id"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"event_types"`
	Description    string    `json:"description"`
	Disabled       bool      `json:"disabled"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func endpointOut(e courier.Endpoint) endpointJSON {
	return endpointJSON{ID: e.ID, AccountID: e.AccountID, URL: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		Disabled: e.Disabled, DisabledReason: e.DisabledReason, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

type attemptJSON struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	LatencyMS  int64     `json:"latency_ms"`
	Response   string    `json:"response"`
	// ErrorCategory and Error say why a failed attempt failed: a category
	// and a message safe for the account's admins.
	ErrorCategory string `json:"error_category,omitempty"`
	Error         string `json:"error,omitempty"`
}

type deliveryJSON struct {
	ID            string        `json:"id"`
	EventID       string        `json:"event_id"`
	EventType     string        `json:"event_type"`
	Status        string        `json:"status"`
	Waiting       bool          `json:"waiting"`
	Attempts      []attemptJSON `json:"attempts"`
	NextAttemptAt *time.Time    `json:"next_attempt_at"`
	CreatedAt     time.Time     `json:"created_at"`
}

func deliveryOut(d courier.Delivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, Waiting: d.Waiting, NextAttemptAt: d.NextAttemptAt,
		CreatedAt: d.CreatedAt, Attempts: []attemptJSON{}}
	for _, a := range d.Log {
		j := attemptJSON{At: a.At, LatencyMS: a.Latency.Milliseconds(), Response: a.Response, ErrorCategory: a.ErrorCategory, Error: a.Error}
		if a.StatusCode != 0 {
			code := a.StatusCode
			j.StatusCode = &code
		}
		out.Attempts = append(out.Attempts, j)
	}
	return out
}

type endpointRequest struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Description *string  `json:"description"`
}

func (h *handlers) createEndpoint(w http.ResponseWriter, r *http.Request) {
	if !h.requireUser(w, r) {
		return
	}
	var req endpointRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	e, secret, err := h.hooks.Create(ctx, m, courier.EndpointInput{URL: req.URL, EventTypes: req.EventTypes, Description: req.Description})
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", r.URL.Path+"/"+e.ID)
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"endpoint": endpointOut(e), "secret": secret})
}

func (h *handlers) listEndpoints(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	list, err := h.hooks.List(ctx, m)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	out := []endpointJSON{}
	for _, e := range list {
		out = append(out, endpointOut(e))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"endpoints": out})
}

func (h *handlers) getEndpoint(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	e, err := h.hooks.Get(ctx, m, r.PathValue("endpoint_id"))
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"endpoint": endpointOut(e)})
}

type endpointPatch struct {
	URL         *string   `json:"url"`
	EventTypes  *[]string `json:"event_types"`
	Description *string   `json:"description"`
	Disabled    *bool     `json:"disabled"`
}

func (h *handlers) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	if !h.requireUser(w, r) {
		return
	}
	var req endpointPatch
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	e, err := h.hooks.Update(ctx, m, r.PathValue("endpoint_id"),
		courier.EndpointPatch{URL: req.URL, EventTypes: req.EventTypes, Description: req.Description, Disabled: req.Disabled})
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"endpoint": endpointOut(e)})
}

func (h *handlers) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	if err := h.hooks.Delete(ctx, m, r.PathValue("endpoint_id")); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handlers) rotateSecret(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	e, secret, err := h.hooks.Rotate(ctx, m, r.PathValue("endpoint_id"))
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"endpoint": endpointOut(e), "secret": secret})
}

func (h *handlers) listDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var f errs.Fields
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			f.Add("limit", courier.RuleInvalid)
		}
		limit = n
	}
	var before int64
	if v := q.Get("cursor"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		n, perr := strconv.ParseInt(string(b), 10, 64)
		if err != nil || perr != nil || n < 1 {
			f.Add("cursor", courier.RuleInvalid)
		}
		before = n
	}
	if err := f.Err(courier.CodeValidation, "the query has invalid parameters"); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	list, err := h.hooks.Deliveries(ctx, m, r.PathValue("endpoint_id"), before, limit+1)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	var next *string
	if len(list) > limit {
		list = list[:limit]
		c := base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(list[limit-1].Seq, 10)))
		next = &c
	}
	out := []deliveryJSON{}
	for _, d := range list {
		out = append(out, deliveryOut(d))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"deliveries": out, "next_cursor": next})
}

func (h *handlers) retryDelivery(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	m, err := h.member(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	d, err := h.hooks.Retry(ctx, m, r.PathValue("endpoint_id"), r.PathValue("delivery_id"))
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	if h.kick != nil {
		h.kick()
	}
	httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"delivery": deliveryOut(d)})
}

// requireUser answers 401 before reading a body when there is no token.
func (h *handlers) requireUser(w http.ResponseWriter, r *http.Request) bool {
	if userToken(r) == "" {
		fail(w, r, h.logger, errs.New(courier.CodeUnauthorized, "a valid identity access token is required"))
		return false
	}
	return true
}
