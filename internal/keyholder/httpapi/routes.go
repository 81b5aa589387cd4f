// Package httpapi is keyholder's HTTP surface: the exchange, the credential
// deletion and the pull record under /v1 (box's error envelope), the
// registry front under /v2 (OCI error bodies), the probes and the OpenAPI
// document.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/registry"
	"github.com/platformco/platform/internal/openapi"
)

// New returns keyholder's handler.
func New(svc *keyholder.Service, front *registry.Front, logger *slog.Logger, readiness func(context.Context) httpx.Readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(readiness))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	h := &handlers{svc: svc, logger: logger}
	mux.HandleFunc("POST /v1/exchange", h.exchange)
	mux.HandleFunc("DELETE /v1/credentials/{username}", h.deleteCredential)
	mux.HandleFunc("GET /v1/accounts/{account_id}/pulls", h.pulls)
	// The front takes every method (writes get the OCI DENIED) and every
	// /v2 path, unclean ones included: it parses the escaped path itself.
	mux.Handle("/v2/", front)
	mux.Handle("/", fallback(mux))
	return httpx.Chain(mux, httpx.Observe(logger, func(w http.ResponseWriter, r *http.Request) {
		writeEnvelope(w, http.StatusInternalServerError, codeInternal, msgInternal, nil)
	}))
}

// fallback answers what no route matched: 405 with Allow when the path
// exists under another method, 404 otherwise.
func fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
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
			writeEnvelope(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed", nil)
			return
		}
		writeEnvelope(w, http.StatusNotFound, keyholder.CodeNotFound, "not found", nil)
	})
}
