// Package httpapi is box's HTTP surface: the routes, the JSON shapes of
// entitlements.md and operations.md section 4, and the one table that maps
// box's error codes to statuses in the {error: {code, message}} envelope.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/openapi"
)

// Deps are what box's handlers need.
type Deps struct {
	// Service is nil when no database is configured (every /v1 route is
	// 404) or while Waiting.
	Service *box.Service
	// Waiting is true while the database has not yet answered with a
	// current schema (sqldb.Gate): every /v1 route answers 503 unavailable.
	Waiting bool
	// Idempotency makes the creating POSTs honour Idempotency-Key; nil
	// ignores the header.
	Idempotency *idempotency.Store
	// Ready answers /readyz; nil answers as a service without a database.
	Ready  func(context.Context) httpx.Readiness
	Logger *slog.Logger
}

// NewServer returns box's HTTP handler.
func NewServer(d Deps) http.Handler {
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	switch {
	case d.Service != nil:
		routes(mux, &handlers{svc: d.Service, logger: d.Logger}, d.Idempotency)
	case d.Waiting:
		mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			writeEnvelope(w, http.StatusServiceUnavailable, box.CodeUnavailable, msgUnavailable)
		})
	}
	return httpx.Finish(mux, d.Logger, refuse)
}

// refuse writes httpx.Finish's refusals in box's envelope, with box's own
// wording for the ones its document fixes.
func refuse(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	switch code {
	case httpx.CodeNotFound:
		message = box.MsgNotFound
	case httpx.CodeMethodNotAllowed:
		message = "method not allowed"
	case httpx.CodeInternal:
		message = msgInternal
	}
	writeEnvelope(w, status, code, message)
}

func routes(mux *http.ServeMux, h *handlers, idem *idempotency.Store) {
	// Creating POSTs honour Idempotency-Key inside the staff or member
	// check, which runs on every request, replays included: a record
	// replays only to the user who made it, while they may still make the
	// request, and nothing is read or written for a caller who may not.
	once := func(_ string, next http.Handler) http.Handler { return next }
	if idem != nil {
		fail := func(w http.ResponseWriter, r *http.Request, status int, code, message string) {
			writeEnvelope(w, status, code, message)
		}
		once = func(userID string, next http.Handler) http.Handler {
			return idem.Wrap(func(*http.Request) string { return "user:" + userID }, fail, next)
		}
	}
	mux.HandleFunc("GET /v1/operator/entitlements", h.listEntitlements)
	mux.Handle("POST /v1/operator/entitlements", h.asStaff(once, h.grant))
	mux.HandleFunc("POST /v1/operator/entitlements/{id}/revoke", h.revoke)
	mux.HandleFunc("GET /v1/operator/releases", h.listReleases)
	mux.HandleFunc("GET /v1/operator/audit-events", h.auditTrail)
	// A release pipeline publishes with a staff key (releases:publish)
	// rather than a person's session (licensing.md section 4).
	mux.Handle("POST /v1/operator/releases", h.asPublisher(once, h.publishRelease))
	mux.HandleFunc("GET /v1/accounts/{account_id}/entitlements", h.customerEntitlements)
	mux.HandleFunc("GET /v1/accounts/{account_id}/holdings", h.holdings)
	mux.Handle("POST /v1/accounts/{account_id}/artifact_fetches", h.asMember(false, once, h.fetchArtifact))
	mux.HandleFunc("GET /v1/accounts/{account_id}/releases", h.accountReleases)
	mux.Handle("POST /v1/accounts/{account_id}/approvals", h.asMember(true, once, h.approve))
	mux.Handle("POST /v1/accounts/{account_id}/claims", h.asMember(true, once, h.claim))
	mux.HandleFunc("GET /v1/accounts/{account_id}/audit-events", h.timeline)
	mux.HandleFunc("POST /v1/capabilities/redeem", h.redeem)
	mux.HandleFunc("POST /v1/accounts/{account_id}/installations", h.activate)
	mux.HandleFunc("GET /v1/accounts/{account_id}/installations", h.accountInstallations)
	mux.HandleFunc("POST /v1/installations/{id}/heartbeat", h.heartbeat)
	mux.HandleFunc("DELETE /v1/installations/{id}", h.deactivate)
	mux.HandleFunc("POST /v1/installations/{id}/license", h.license)
	mux.HandleFunc("GET /v1/operator/installations", h.operatorInstallations)
	mux.HandleFunc("GET /v1/license/keys", h.licenseKeys)
}
