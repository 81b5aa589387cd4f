// Package httpapi is keyholder's HTTP surface: the exchange, the credential
// deletion, the pull record and the browser downloads under /v1 (box's error envelope), the
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

// Deps are what keyholder's handlers need.
type Deps struct {
	// Service and Front are nil while Waiting.
	Service *keyholder.Service
	Front   *registry.Front
	// Waiting is true while the database has not yet answered with a
	// current schema (sqldb.Gate): /v1 and /v2 answer 503 unavailable, each
	// in its own envelope.
	Waiting bool
	// Realm names the /v2 Basic challenge (the public registry host).
	Realm string
	// Identity resolves a caller's bearer token to a member of an account
	// or to staff (NewIdentity); nil answers those routes unavailable.
	Identity Identity
	// Box checks a download with box and Files reads releases from the
	// registry; either nil answers the download routes unavailable.
	Box   DownloadBox
	Files Files
	// Ready answers /readyz.
	Ready  func(context.Context) httpx.Readiness
	Logger *slog.Logger
}

// NewServer returns keyholder's handler.
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
		h := &handlers{svc: d.Service, identity: d.Identity, logger: d.Logger}
		mux.HandleFunc("POST /v1/exchange", h.exchange)
		mux.HandleFunc("DELETE /v1/credentials/{username}", h.deleteCredential)
		mux.HandleFunc("GET /v1/accounts/{account_id}/pulls", h.pulls)
		mux.HandleFunc("GET /v1/operator/accounts/{account_id}/pulls", h.staffPulls)
		dl := &downloads{svc: d.Service, box: d.Box, files: d.Files, logger: d.Logger}
		mux.HandleFunc("GET /v1/accounts/{account_id}/downloads/{repository}/{version}", dl.list)
		mux.HandleFunc("GET /v1/accounts/{account_id}/downloads/{repository}/{version}/files/{filename}", dl.file)
		// The front takes every method (writes get the OCI DENIED) and every
		// /v2 path, unclean ones included: it parses the escaped path itself.
		mux.Handle("/v2/", d.Front)
	case d.Waiting:
		mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			writeEnvelope(w, http.StatusServiceUnavailable, keyholder.CodeUnavailable, "service temporarily unavailable", nil)
		})
		mux.Handle("/v2/", registry.Waiting(d.Realm))
	}
	return httpx.Finish(mux, d.Logger, refuse)
}

// refuse writes httpx.Finish's refusals in box's envelope, which keyholder
// speaks under /v1.
func refuse(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	switch code {
	case httpx.CodeNotFound:
		message = "not found"
	case httpx.CodeMethodNotAllowed:
		message = "method not allowed"
	case httpx.CodeInternal:
		code, message = codeInternal, msgInternal
	}
	writeEnvelope(w, status, code, message, nil)
}
