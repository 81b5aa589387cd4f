// Package httpapi is box's HTTP surface: the routes, the JSON shapes of
// entitlements.md and operations.md section 4, and the one table that maps
// box's error codes to statuses in the {error: {code, message}} envelope.
package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	once := func(fn http.HandlerFunc) http.Handler {
		if idem == nil {
			return fn
		}
		return idem.Wrap(callerScope, func(w http.ResponseWriter, r *http.Request, status int, code, message string) {
			writeEnvelope(w, status, code, message)
		}, fn)
	}
	mux.HandleFunc("GET /v1/operator/entitlements", h.listEntitlements)
	mux.Handle("POST /v1/operator/entitlements", once(h.grant))
	mux.HandleFunc("POST /v1/operator/entitlements/{id}/revoke", h.revoke)
	mux.HandleFunc("GET /v1/operator/releases", h.listReleases)
	mux.Handle("POST /v1/operator/releases", once(h.publishRelease))
	mux.HandleFunc("GET /v1/accounts/{account_id}/entitlements", h.customerEntitlements)
	mux.Handle("POST /v1/accounts/{account_id}/artifact_fetches", once(h.fetchArtifact))
	mux.HandleFunc("GET /v1/accounts/{account_id}/releases", h.accountReleases)
	mux.Handle("POST /v1/accounts/{account_id}/approvals", once(h.approve))
	mux.Handle("POST /v1/accounts/{account_id}/claims", once(h.claim))
	mux.HandleFunc("GET /v1/accounts/{account_id}/audit-events", h.timeline)
	mux.HandleFunc("POST /v1/capabilities/redeem", h.redeem)
}

// callerScope scopes Idempotency-Keys to the caller's credential: box keeps
// no users, and resolving the user would cost an identity round trip
// before the key could be claimed. Only a digest of the token is used.
func callerScope(r *http.Request) string {
	tok := bearer(r)
	if tok == "" {
		return "anonymous"
	}
	sum := sha256.Sum256([]byte(tok))
	return "token:" + hex.EncodeToString(sum[:])
}
