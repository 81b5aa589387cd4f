// Package httpapi is pantry's HTTP surface (pantry.md sections 2 and 3):
// the routes, the JSON shapes, the public reads' caching headers, and the
// one table from pantry's codes to statuses in application/problem+json.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/openapi"
	"github.com/platformco/platform/internal/pantry"
)

// Deps are what pantry's handlers need.
type Deps struct {
	// Service is nil without a database (every /v1 route is 404) or
	// while Waiting.
	Service *pantry.Service
	// Waiting is true while the database has not yet answered with a
	// current schema: every /v1 route answers 503.
	Waiting bool
	// Ready answers /readyz; nil answers as a service without a database.
	Ready  func(context.Context) httpx.Readiness
	Logger *slog.Logger
}

// NewServer returns pantry's HTTP handler.
func NewServer(d Deps) http.Handler {
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	e := errorsOf(d.Logger)
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	switch {
	case d.Service != nil:
		routes(mux, &handlers{svc: d.Service, errors: e})
	case d.Waiting:
		mux.HandleFunc("/v1/", e.Unavailable)
	}
	return httpx.Finish(mux, d.Logger, e.Writer())
}

func routes(mux *http.ServeMux, h *handlers) {
	mux.HandleFunc("GET /v1/projects", h.list)
	mux.HandleFunc("GET /v1/projects/{slug}", h.get)
	mux.HandleFunc("GET /v1/tags", h.tags)
	mux.HandleFunc("GET /v1/accounts/{account_id}/projects", h.accountProjects)
	mux.HandleFunc("POST /v1/accounts/{account_id}/projects", h.create)
	mux.HandleFunc("PATCH /v1/projects/{slug}", h.update)
	mux.HandleFunc("DELETE /v1/projects/{slug}", h.remove)
	mux.HandleFunc("PUT /v1/projects/{slug}/star", h.star)
	mux.HandleFunc("DELETE /v1/projects/{slug}/star", h.unstar)
	mux.HandleFunc("GET /v1/me/stars", h.myStars)
}
