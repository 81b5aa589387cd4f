package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

type handlers struct {
	svc       *courier.Service
	hooks     *courier.Webhooks
	push      *courier.Push
	vapidKey  string
	identity  Identity
	kick      func()
	tokens    ServiceTokens
	logger    *slog.Logger
	dbTimeout time.Duration
}

// bounded is the request's context bounded by DATABASE_TIMEOUT.
func (h *handlers) bounded(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.dbTimeout)
}

type sendRequest struct {
	Template string         `json:"template"`
	To       string         `json:"to"`
	Locale   *string        `json:"locale"`
	Data     map[string]any `json:"data"`
}

type emailSummary struct {
	ID        string    `json:"id"`
	Template  string    `json:"template"`
	To        string    `json:"to"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}

type historyEntry struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

type emailDetail struct {
	emailSummary
	Locale      string         `json:"locale"`
	RequestedBy string         `json:"requested_by"`
	Attempts    int            `json:"attempts"`
	UpdatedAt   time.Time      `json:"updated_at"`
	History     []historyEntry `json:"history"`
}

func summary(e courier.Email) emailSummary {
	return emailSummary{ID: e.ID, Template: e.Template, To: e.To, Status: e.Status, CreatedAt: e.CreatedAt}
}

func (h *handlers) sendEmail(w http.ResponseWriter, r *http.Request) {
	var req sendRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	e, err := h.svc.Send(ctx, callerOf(r), courier.SendRequest{Template: req.Template, To: req.To, Locale: req.Locale, Data: req.Data})
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Location", "/v1/emails/"+e.ID)
	httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"email": summary(e)})
}

func (h *handlers) getEmail(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	e, err := h.svc.Email(ctx, r.PathValue("id"))
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	d := emailDetail{emailSummary: summary(e), Locale: e.Locale, RequestedBy: e.RequestedBy, Attempts: e.Attempts, UpdatedAt: e.UpdatedAt, History: []historyEntry{}}
	for _, c := range e.History {
		d.History = append(d.History, historyEntry{Status: c.Status, At: c.At, Detail: c.Detail})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"email": d})
}

type suppressRequest struct {
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

func (h *handlers) suppress(w http.ResponseWriter, r *http.Request) {
	var req suppressRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	s, err := h.svc.ReportComplaint(ctx, req.Address, req.Reason)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"suppression": map[string]any{
		"id": s.ID, "address": s.Address, "reason": s.Reason, "created_at": s.CreatedAt,
	}})
}

// userToken is the signed-in user's bearer token ("" when there is none).
func userToken(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok)
}

func (h *handlers) getPreferences(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	u, err := h.user(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	p, err := h.svc.Preferences(ctx, u)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"preferences": p})
}

func (h *handlers) patchPreferences(w http.ResponseWriter, r *http.Request) {
	// The keys are read loosely so that an unknown category is a 422
	// naming it (courier.md section 3), not a decoding error.
	if userToken(r) == "" {
		fail(w, r, h.logger, errs.New(courier.CodeUnauthorized, "a valid identity access token is required"))
		return
	}
	var body map[string]json.RawMessage
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	patch, err := courier.ParsePreferencesPatch(body)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	ctx, cancel := h.bounded(r)
	defer cancel()
	u, err := h.user(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	p, err := h.svc.UpdatePreferences(ctx, u, patch)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"preferences": p})
}
