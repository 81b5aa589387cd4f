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
	// Service and Webhooks are nil while Waiting.
	Service *courier.Service
	// Waiting is true while the database has not yet answered with a
	// current schema (sqldb.Gate): every /v1 route answers 503
	// unavailable.
	Waiting  bool
	Webhooks *courier.Webhooks
	// Push manages push subscriptions; nil (no VAPID key pair) leaves the
	// push routes unregistered, so they answer 404. VAPIDPublicKey is the
	// key browsers subscribe with.
	Push           *courier.Push
	VAPIDPublicKey string
	// Identity resolves a user's bearer token to a user, or to a member of
	// an account (identityclient); nil answers those routes unavailable.
	Identity Identity
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

// NewServer returns courier's handler.
func NewServer(d Deps) http.Handler {
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	if d.Mailbox != nil {
		mux.Handle("GET /dev/mail", d.Mailbox)
		mux.Handle("GET /dev/mail.json", d.MailboxJSON)
	}
	switch {
	case d.Service != nil:
		routes(mux, d)
	case d.Waiting:
		mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			httpx.WriteProblem(w, r, http.StatusServiceUnavailable, courier.CodeUnavailable, "the service is temporarily unavailable; try again shortly", nil)
		})
	}
	return httpx.Finish(mux, d.Logger, refuse)
}

// refuse writes httpx.Finish's refusals in problem+json.
func refuse(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	httpx.WriteProblem(w, r, status, code, message, nil)
}

func routes(mux *http.ServeMux, d Deps) {
	h := &handlers{svc: d.Service, hooks: d.Webhooks, push: d.Push, vapidKey: d.VAPIDPublicKey, identity: d.Identity, kick: d.KickDeliveries, tokens: d.Tokens, logger: d.Logger, dbTimeout: d.DatabaseTimeout}
	if h.dbTimeout <= 0 {
		h.dbTimeout = 5 * time.Second
	}

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
	if d.Push != nil {
		mux.Handle("GET /v1/emails/{id}/pushes", h.requireService(http.HandlerFunc(h.getEmailPushes)))
		mux.HandleFunc("GET /v1/push/vapid_public_key", h.vapidPublicKey)
		mux.HandleFunc("POST /v1/me/push_subscriptions", h.createPushSubscription)
		mux.HandleFunc("GET /v1/me/push_subscriptions", h.listPushSubscriptions)
		mux.HandleFunc("DELETE /v1/me/push_subscriptions/{id}", h.deletePushSubscription)
	}
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints", h.createEndpoint)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints", h.listEndpoints)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.getEndpoint)
	mux.HandleFunc("PATCH /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.patchEndpoint)
	mux.HandleFunc("DELETE /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}", h.deleteEndpoint)
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/rotate_secret", h.rotateSecret)
	mux.HandleFunc("GET /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/deliveries", h.listDeliveries)
	mux.HandleFunc("POST /v1/accounts/{account_id}/webhook_endpoints/{endpoint_id}/deliveries/{delivery_id}/retry", h.retryDelivery)
}
