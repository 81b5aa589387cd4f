// Package httpapi is muse's HTTP surface (muse.md sections 2 to 4): the
// OpenAI-compatible routes in OpenAI's shapes, the management routes in
// application/problem+json, and the table from muse's codes to statuses.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/openapi"
)

// DefaultMaxRequestBytes bounds a chat request's body (MUSE_MAX_REQUEST_BYTES).
const DefaultMaxRequestBytes = 4 << 20

// Deps are what muse's handlers need.
type Deps struct {
	// Service is nil without a database (every /v1 route is 404) or
	// while Waiting.
	Service *muse.Service
	// Waiting is true while the database has not yet answered with a
	// current schema: every /v1 route answers 503.
	Waiting bool
	// MaxRequestBytes bounds a chat request (DefaultMaxRequestBytes).
	MaxRequestBytes int64
	Ready           func(context.Context) httpx.Readiness
	Logger          *slog.Logger
}

// NewServer returns muse's HTTP handler.
func NewServer(d Deps) http.Handler {
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxRequestBytes <= 0 {
		d.MaxRequestBytes = DefaultMaxRequestBytes
	}
	e := problems(d.Logger)
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	switch {
	case d.Service != nil:
		routes(mux, &handlers{svc: d.Service, errors: e, openai: openAIErrors(d.Logger), maxBody: d.MaxRequestBytes})
	case d.Waiting:
		mux.HandleFunc("/v1/", e.Unavailable)
	}
	return httpx.Finish(mux, d.Logger, e.Writer())
}

func routes(mux *http.ServeMux, h *handlers) {
	mux.HandleFunc("POST /v1/chat/completions", h.chat)
	mux.HandleFunc("GET /v1/models", h.models)
	mux.HandleFunc("POST /v1/accounts/{account_id}/provider_credentials", h.createCredential)
	mux.HandleFunc("GET /v1/accounts/{account_id}/provider_credentials", h.listCredentials)
	mux.HandleFunc("DELETE /v1/accounts/{account_id}/provider_credentials/{credential_id}", h.deleteCredential)
	mux.HandleFunc("POST /v1/operator/provider_credentials", h.createCredential)
	mux.HandleFunc("GET /v1/operator/provider_credentials", h.listCredentials)
	mux.HandleFunc("DELETE /v1/operator/provider_credentials/{credential_id}", h.deleteCredential)
	mux.HandleFunc("GET /v1/accounts/{account_id}/models", h.listAliases)
	mux.HandleFunc("PUT /v1/accounts/{account_id}/models/{alias}", h.putAlias)
	mux.HandleFunc("GET /v1/accounts/{account_id}/models/{alias}", h.getAlias)
	mux.HandleFunc("DELETE /v1/accounts/{account_id}/models/{alias}", h.deleteAlias)
	mux.HandleFunc("PUT /v1/accounts/{account_id}/budget", h.putBudget)
	mux.HandleFunc("GET /v1/accounts/{account_id}/budget", h.getBudget)
	mux.HandleFunc("GET /v1/accounts/{account_id}/usage/models", h.usage)
}
