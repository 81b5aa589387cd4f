// Package httpapi is courier's HTTP surface: the routes of courier.md, the
// JSON shapes, and the one table that maps courier's error codes to
// statuses in problem+json (as identity answers).
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/openapi"
)

// Deps are what the handler needs. Mailbox is set only with the local
// mail adapter (development), and serves /dev/mail.
type Deps struct {
	Service  *courier.Service
	Webhooks *courier.Webhooks
	// KickDeliveries, when set, wakes the delivery loop (a manual retry
	// is delivered at once).
	KickDeliveries  func()
	Tokens          ServiceTokens
	Idempotency     *idempotency.Store
	Mailbox         http.Handler
	MailboxJSON     http.Handler
	Ready           func(context.Context) httpx.Readiness
	Logger          *slog.Logger
	DatabaseTimeout time.Duration
}

// New returns courier's handler.
func New(d Deps) http.Handler {
	h := &handlers{svc: d.Service, hooks: d.Webhooks, kick: d.KickDeliveries, tokens: d.Tokens, logger: d.Logger, dbTimeout: d.DatabaseTimeout}
	if h.dbTimeout <= 0 {
		h.dbTimeout = 5 * time.Second
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))

	once := func(fn http.HandlerFunc) http.Handler {
		return d.Idempotency.Wrap(func(r *http.Request) string { return "service:" + callerOf(r) },
			func(w http.ResponseWriter, r *http.Request, status int, code, message string) {
				httpx.WriteProblem(w, r, status, code, message, nil)
			}, fn)
	}
	mux.Handle("POST /v1/emails", h.requireService(once(h.sendEmail)))
	mux.Handle("GET /v1/emails/{id}", h.requireService(http.HandlerFunc(h.getEmail)))
	mux.Handle("POST /v1/suppressions", h.requireService(http.HandlerFunc(h.suppress)))
	mux.HandleFunc("GET /v1/me/preferences", h.getPreferences)
	mux.HandleFunc("PATCH /v1/me/preferences", h.patchPreferences)
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints", h.createEndpoint)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints", h.listEndpoints)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.getEndpoint)
	mux.HandleFunc("PATCH /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.patchEndpoint)
	mux.HandleFunc("DELETE /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.deleteEndpoint)
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/rotate_secret", h.rotateSecret)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/deliveries", h.listDeliveries)
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/deliveries/{delivery_id}/retry", h.retryDelivery)
	if d.Mailbox != nil {
		mux.Handle("GET /dev/mail", d.Mailbox)
		mux.Handle("GET /dev/mail.json", d.MailboxJSON)
	}
	mux.Handle("/", fallback(mux))
	return httpx.Chain(mux, httpx.Observe(d.Logger, internalError))
}

// fallback answers what no route matched: 405 with Allow when the path
// exists under another method, 404 otherwise.
func fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) > 0 {
			for _, m := range allowed {
				w.Header().Add("Allow", m)
			}
			httpx.WriteProblem(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed", nil)
			return
		}
		httpx.WriteProblem(w, r, http.StatusNotFound, courier.CodeNotFound, "no such resource", nil)
	})
}
