package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

// MinServiceSecret is the shortest secret BILLING_SERVICE_TOKENS accepts.
const MinServiceSecret = 32

// ServiceTokens are the platform services allowed to record usage: name →
// digest of the secret, so a comparison takes the same time whatever the
// presented secret's length.
type ServiceTokens map[string][sha256.Size]byte

// ParseServiceTokens reads BILLING_SERVICE_TOKENS: comma-separated
// name:secret pairs, secrets of at least MinServiceSecret characters. Its
// errors never repeat a secret.
func ParseServiceTokens(s string) (ServiceTokens, error) {
	out := ServiceTokens{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, item := range strings.Split(s, ",") {
		name, secret, ok := strings.Cut(strings.TrimSpace(item), ":")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("entry %d must be name:secret", i+1)
		case strings.ContainsAny(name, " \t"):
			return nil, fmt.Errorf("entry %d: the name must have no spaces", i+1)
		case len(secret) < MinServiceSecret:
			return nil, fmt.Errorf("entry %d (%s): the secret must be at least %d characters", i+1, name, MinServiceSecret)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("entry %d: %s is named twice", i+1, name)
		}
		out[name] = sha256.Sum256([]byte(secret))
	}
	return out, nil
}

// caller returns the service a request's `Authorization: Bearer
// name:secret` names, or "" when the credential is missing or wrong.
func (t ServiceTokens) caller(r *http.Request) string {
	name, secret, ok := strings.Cut(bearer(r), ":")
	want, known := t[name]
	if !ok || !known {
		return ""
	}
	got := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return ""
	}
	return name
}

type usageBody struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"account_id"`
	Metric      string    `json:"metric"`
	Quantity    int64     `json:"quantity"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	Source      string    `json:"source"`
	CreatedAt   time.Time `json:"created_at"`
}

// recordUsage is POST /v1/usage, for platform services only.
func (h *handlers) recordUsage(w http.ResponseWriter, r *http.Request) {
	name := h.tokens.caller(r)
	if name == "" {
		h.errs.Write(w, r, errs.New(billing.CodeUnauthenticated, "a platform service credential is required"))
		return
	}
	var body struct {
		ID          *string          `json:"id"`
		AccountID   *string          `json:"account_id"`
		Metric      *string          `json:"metric"`
		Quantity    *json.RawMessage `json:"quantity"`
		WindowStart *string          `json:"window_start"`
		WindowEnd   *string          `json:"window_end"`
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		h.errs.Write(w, r, err)
		return
	}
	u, created, err := h.svc.RecordUsage(r.Context(), billing.Caller{Name: name}, billing.UsageInput{ID: body.ID,
		AccountID: body.AccountID, Metric: body.Metric, Quantity: raw(body.Quantity), WindowStart: body.WindowStart, WindowEnd: body.WindowEnd})
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	status := http.StatusCreated
	if created {
		if h.meters != nil {
			h.meters.Kick()
		}
	} else {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	httpx.WriteJSON(w, status, map[string]usageBody{"usage": {u.ID, u.AccountID, u.Metric, u.Quantity, u.WindowStart.UTC(),
		u.WindowEnd.UTC(), u.Source, u.CreatedAt.UTC()}})
}

type hourBody struct {
	Metric   string    `json:"metric"`
	Hour     time.Time `json:"hour"`
	Quantity int64     `json:"quantity"`
}

// accountUsage is GET /v1/accounts/{id}/usage (members).
func (h *handlers) accountUsage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	hs, from, to, err := h.svc.Usage(r.Context(), bearer(r), r.PathValue("id"), q.Get("metric"), q.Get("from"), q.Get("to"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	out := make([]hourBody, len(hs))
	for i, x := range hs {
		out[i] = hourBody{x.Metric, x.Hour.UTC(), x.Quantity}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"from": from, "to": to, "usage": out})
}
