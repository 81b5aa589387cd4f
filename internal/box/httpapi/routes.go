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
)

// New returns box's handler. With a nil svc (no DATABASE_URL) only the
// probes exist and every /v1 call is 404. readiness answers /readyz.
func New(svc *box.Service, logger *slog.Logger, readiness func(context.Context) httpx.Readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(readiness))
	if svc != nil {
		h := &handlers{svc: svc, logger: logger}
		mux.HandleFunc("GET /v1/operator/entitlements", h.listEntitlements)
		mux.HandleFunc("POST /v1/operator/entitlements", h.grant)
		mux.HandleFunc("POST /v1/operator/entitlements/{id}/revoke", h.revoke)
		mux.HandleFunc("GET /v1/operator/releases", h.listReleases)
		mux.HandleFunc("POST /v1/operator/releases", h.publishRelease)
		mux.HandleFunc("GET /v1/accounts/{account_id}/entitlements", h.customerEntitlements)
		mux.HandleFunc("POST /v1/accounts/{account_id}/artifact_fetches", h.fetchArtifact)
		mux.HandleFunc("GET /v1/accounts/{account_id}/releases", h.accountReleases)
		mux.HandleFunc("POST /v1/accounts/{account_id}/approvals", h.approve)
		mux.HandleFunc("POST /v1/accounts/{account_id}/claims", h.claim)
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
