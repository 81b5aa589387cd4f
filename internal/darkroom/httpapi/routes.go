// Package httpapi is darkroom's HTTP surface (darkroom.md sections 2 and
// 3): the routes, the JSON shapes, the media reads with Range, ETag and
// caching by visibility, and the one table from darkroom's codes to
// statuses in application/problem+json.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/openapi"
)

// Deps are what darkroom's handlers need.
type Deps struct {
	// Service is nil without a database (every /v1 route is 404) or
	// while Waiting.
	Service *darkroom.Service
	// Waiting is true while the database has not yet answered with a
	// current schema: every /v1 route answers 503.
	Waiting bool
	// Ready answers /readyz; nil answers as a service without a database.
	Ready  func(context.Context) httpx.Readiness
	Logger *slog.Logger
}

// NewServer returns darkroom's HTTP handler.
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
	mux.HandleFunc("POST /v1/uploads", h.createUpload)
	mux.HandleFunc("POST /v1/uploads/{id}/complete", h.complete)
	mux.HandleFunc("POST /v1/media", h.direct)
	mux.HandleFunc("GET /v1/media/{id}", h.original)
	mux.HandleFunc("DELETE /v1/media/{id}", h.remove)
	mux.HandleFunc("POST /v1/media/{id}/links", h.link)
	mux.HandleFunc("GET /v1/media/{id}/{preset}", h.variant)
}
