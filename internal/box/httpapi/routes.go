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

// New returns box's handler. With a nil svc (no DATABASE_URL) only the
// probes and /openapi.json exist and every /v1 call is 404. readiness
// answers /readyz. With idem, the creating POSTs honour Idempotency-Key.
func New(svc *box.Service, logger *slog.Logger, readiness func(context.Context) httpx.Readiness, idem *idempotency.Store) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(readiness))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	if svc != nil {
		h := &handlers{svc: svc, logger: logger}
		// Creating POSTs honour Idempotency-Key inside the staff or member
		// check, which runs on every request, replays included: a record
		// replays only to the user who made it, while they may still make
		// the request, and nothing is read or written for a caller who may
		// not.
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
		mux.Handle("POST /v1/operator/releases", h.asStaff(once, h.publishRelease))
		mux.HandleFunc("GET /v1/accounts/{account_id}/entitlements", h.customerEntitlements)
		mux.Handle("POST /v1/accounts/{account_id}/artifact_fetches", h.asMember(false, once, h.fetchArtifact))
		mux.HandleFunc("GET /v1/accounts/{account_id}/releases", h.accountReleases)
		mux.Handle("POST /v1/accounts/{account_id}/approvals", h.asMember(true, once, h.approve))
		mux.Handle("POST /v1/accounts/{account_id}/claims", h.asMember(true, once, h.claim))
		mux.HandleFunc("GET /v1/accounts/{account_id}/audit-events", h.timeline)
		mux.HandleFunc("POST /v1/capabilities/redeem", h.redeem)
	}
	mux.Handle("/", fallback(mux))
	return httpx.Chain(mux, httpx.Observe(logger, func(w http.ResponseWriter, r *http.Request) {
		writeEnvelope(w, http.StatusInternalServerError, codeInternal, msgInternal)
	}))
}

// fallback answers what no route matched in box's envelope: 405 when the
// path exists under another method, 404 otherwise.
func fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost} {
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
			writeEnvelope(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
			return
		}
		writeEnvelope(w, http.StatusNotFound, box.CodeNotFound, box.MsgNotFound)
	})
}
