package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/httpx"
)

// The push routes (courier.md section 6), registered only while a VAPID
// key pair is configured: without one they answer 404 like any unknown
// path.

type pushSubscriptionRequest struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime"`
	Keys           *struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

type pushSubscriptionView struct {
	ID        string    `json:"id"`
	Endpoint  string    `json:"endpoint"`
	Device    string    `json:"device"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func subscriptionView(s courier.PushSubscription) pushSubscriptionView {
	return pushSubscriptionView{ID: s.ID, Endpoint: s.Endpoint, Device: s.Device, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

type pushView struct {
	ID             string         `json:"id"`
	EmailID        string         `json:"email_id"`
	SubscriptionID string         `json:"subscription_id"`
	Template       string         `json:"template"`
	Status         string         `json:"status"`
	Attempts       int            `json:"attempts"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	History        []historyEntry `json:"history"`
}

func (h *handlers) vapidPublicKey(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"public_key": h.vapidKey})
}

func (h *handlers) createPushSubscription(w http.ResponseWriter, r *http.Request) {
	if userToken(r) == "" {
		fail(w, r, h.logger, errNoToken)
		return
	}
	var req pushSubscriptionRequest
	if err := httpx.DecodeJSON(w, r, &req); err != nil {
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
	in := courier.SubscriptionInput{Endpoint: req.Endpoint, UserAgent: r.UserAgent()}
	if req.Keys != nil {
		in.P256dh, in.Auth = req.Keys.P256dh, req.Keys.Auth
	}
	s, err := h.push.Subscribe(ctx, u, in)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"push_subscription": subscriptionView(s)})
}

func (h *handlers) listPushSubscriptions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	u, err := h.user(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	subs, err := h.push.Subscriptions(ctx, u)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	out := make([]pushSubscriptionView, 0, len(subs))
	for _, s := range subs {
		out = append(out, subscriptionView(s))
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"push_subscriptions": out})
}

func (h *handlers) deletePushSubscription(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	u, err := h.user(ctx, r)
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	if err := h.push.Unsubscribe(ctx, u, r.PathValue("id")); err != nil {
		fail(w, r, h.logger, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handlers) getEmailPushes(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.bounded(r)
	defer cancel()
	pushes, err := h.push.Pushes(ctx, r.PathValue("id"))
	if err != nil {
		fail(w, r, h.logger, err)
		return
	}
	out := make([]pushView, 0, len(pushes))
	for _, p := range pushes {
		v := pushView{ID: p.ID, EmailID: p.EmailID, SubscriptionID: p.SubscriptionID, Template: p.Template, Status: p.Status,
			Attempts: p.Attempts, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, History: []historyEntry{}}
		for _, c := range p.History {
			v.History = append(v.History, historyEntry{Status: c.Status, At: c.At, Detail: c.Detail})
		}
		out = append(out, v)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"pushes": out})
}
