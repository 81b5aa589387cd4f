// Package httpapi is identity's HTTP adapter: routes, request decoding,
// the problem+json error table and the authentication middleware.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/openapi"
)

// Deps are what the handlers need.
type Deps struct {
	// Service is nil when no database is configured (every /v1 route and
	// the key set are 404) or while Waiting.
	Service *identity.Service
	// Waiting is true while the database has not yet answered with a
	// current schema (sqldb.Gate): every /v1 route and the key set answer
	// 503 unavailable.
	Waiting bool
	// Idempotency keeps Idempotency-Key records; with nil the header is
	// ignored.
	Idempotency *idempotency.Store
	// Ready answers /readyz; nil answers as a service without a database.
	Ready  func(ctx context.Context) httpx.Readiness
	Logger *slog.Logger
}

// NewServer returns identity's HTTP handler.
func NewServer(d Deps) http.Handler {
	a := &api{svc: d.Service, idem: d.Idempotency, log: d.Logger}
	if d.Ready == nil {
		d.Ready = httpx.NoDatabase
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(d.Ready))
	mux.Handle("GET /openapi.json", openapi.Handler(openapiDocument))
	switch {
	case d.Service != nil:
		a.routes(mux)
	case d.Waiting:
		mux.HandleFunc("/v1/", a.unavailable)
		mux.HandleFunc("/.well-known/", a.unavailable)
	}
	return httpx.Finish(mux, d.Logger, writeProblem)
}

func (a *api) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/jwks.json", a.jwks)

	mux.Handle("POST /v1/users", a.idempotent(anonymous, http.HandlerFunc(a.register)))
	mux.HandleFunc("POST /v1/session", a.login)
	mux.Handle("DELETE /v1/session", a.authenticated(a.logout))
	mux.Handle("GET /v1/me", a.authenticated(a.me))

	mux.Handle("GET /v1/operator/me", a.authenticated(a.operatorMe))
	mux.Handle("GET /v1/operator/users", a.authenticated(a.searchUsers))

	mux.Handle("GET /v1/accounts", a.authenticated(a.listAccounts))
	mux.Handle("POST /v1/accounts", a.authenticated(a.idempotentFor(a.createAccount)))
	mux.Handle("GET /v1/accounts/{accountID}", a.member(identity.MinRoleRead, a.getAccount))
	mux.Handle("PATCH /v1/accounts/{accountID}", a.member(identity.MinRoleRename, a.renameAccount))
	mux.Handle("DELETE /v1/accounts/{accountID}", a.member(identity.MinRoleDelete, a.deleteAccount))
	mux.Handle("GET /v1/accounts/{accountID}/members", a.member(identity.MinRoleRead, a.listMembers))
	mux.Handle("PATCH /v1/accounts/{accountID}/members/{userID}", a.member(identity.MinRoleChangeRole, a.changeRole))
	mux.Handle("DELETE /v1/accounts/{accountID}/members/{userID}", a.member(identity.MinRoleRemove, a.removeMember))
	mux.Handle("POST /v1/accounts/{accountID}/invitations", a.member(identity.MinRoleInvite, a.idempotentFor(a.invite)))
	mux.Handle("POST /v1/invitations/accept", a.authenticated(a.acceptInvitation))
}

// anonymous scopes the Idempotency-Keys of public routes.
func anonymous(*http.Request) string { return "anonymous" }

// idempotent makes h honour Idempotency-Key with keys scoped by scope.
func (a *api) idempotent(scope func(*http.Request) string, h http.Handler) http.Handler {
	if a.idem == nil {
		return h
	}
	return a.idem.Wrap(scope, func(w http.ResponseWriter, r *http.Request, status int, code, message string) {
		httpx.WriteProblem(w, r, status, code, message, nil)
	}, h)
}

// idempotentFor is idempotent for an authenticated handler: keys are
// scoped to the caller.
func (a *api) idempotentFor(h principalHandler) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, p) })
		a.idempotent(func(*http.Request) string { return "user:" + p.User.ID }, inner).ServeHTTP(w, r)
	}
}
