// Package httpapi is identity's HTTP adapter: routes, request decoding,
// the problem+json error table and the authentication middleware.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

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
	// OIDCStore, when set with Service, serves client registration
	// (/v1/accounts/{id}/oidc_clients); OIDC, the OpenID Provider's
	// handler for /.well-known/openid-configuration and /oauth2/….
	OIDCStore identity.OIDCStore
	OIDC      http.Handler
}

// NewServer returns identity's HTTP handler.
func NewServer(d Deps) http.Handler {
	a := &api{svc: d.Service, idem: d.Idempotency, log: d.Logger}
	if d.Service != nil {
		// The issuer's origin is identity's public one; an issuer that is
		// not a bare http(s) URL leaves none, and every cookie-borne
		// state change then needs Sec-Fetch-Site: same-origin.
		if u, err := url.Parse(d.Service.Issuer()); err == nil {
			a.origin, _ = originOf(u.Scheme + "://" + u.Host)
		}
	}
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
		if d.OIDCStore != nil {
			a.oidcRoutes(mux, d.OIDCStore, d.OIDC)
		}
	case d.Waiting:
		mux.HandleFunc("/v1/", a.unavailable)
		mux.HandleFunc("/.well-known/", a.unavailable)
		mux.HandleFunc("/oauth2/", a.unavailable)
	}
	return httpx.Finish(mux, d.Logger, writeProblem)
}

func (a *api) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/jwks.json", a.jwks)

	mux.Handle("POST /v1/users", a.idempotentPublic(http.HandlerFunc(a.register)))
	mux.HandleFunc("POST /v1/session", a.login)
	mux.Handle("DELETE /v1/session", a.authenticated(a.logout))
	mux.Handle("GET /v1/me", a.authenticated(a.me))
	mux.Handle("PATCH /v1/me", a.authenticated(a.updateMe))
	mux.Handle("GET /v1/me/sessions", a.authenticated(a.listSessions))
	mux.Handle("DELETE /v1/me/sessions", a.authenticated(a.endOtherSessions))
	mux.Handle("DELETE /v1/me/sessions/{sessionID}", a.authenticated(a.endSession))
	mux.Handle("POST /v1/me/password", a.authenticated(a.changePassword))

	mux.Handle("GET /v1/operator/me", a.authenticated(a.operatorMe))
	mux.Handle("GET /v1/operator/users", a.authenticated(a.searchUsers))
	// The operator console's reads of any account (staff.go): staff is a
	// property of the user, so these take a session, not a membership.
	mux.Handle("GET /v1/operator/accounts", a.authenticated(a.staffAccounts))
	mux.Handle("GET /v1/operator/staff-changes", a.authenticated(a.staffChanges))
	mux.Handle("GET /v1/operator/accounts/{accountID}", a.authenticated(a.staffAccount))
	mux.Handle("GET /v1/operator/accounts/{accountID}/members", a.authenticated(a.staffMembers))
	// Staff keys for release pipelines (licensing.md section 4), and the
	// check box makes before it publishes a release.
	mux.Handle("GET /v1/operator/api_keys", a.authenticated(a.listStaffAPIKeys))
	mux.Handle("POST /v1/operator/api_keys", a.authenticated(a.createStaffAPIKey))
	mux.Handle("DELETE /v1/operator/api_keys/{keyID}", a.authenticated(a.revokeStaffAPIKey))
	mux.HandleFunc("GET /v1/operator/publisher", a.publisher)

	mux.Handle("GET /v1/accounts", a.authenticated(a.listAccounts))
	mux.Handle("POST /v1/accounts", a.authenticated(a.idempotentFor(a.createAccount)))
	mux.Handle("GET /v1/accounts/{accountID}", a.member(identity.MinRoleRead, a.getAccount))
	mux.Handle("PATCH /v1/accounts/{accountID}", a.member(identity.MinRoleRename, a.renameAccount))
	mux.Handle("DELETE /v1/accounts/{accountID}", a.member(identity.MinRoleDelete, a.deleteAccount))
	mux.Handle("GET /v1/accounts/{accountID}/members", a.member(identity.MinRoleRead, a.listMembers))
	mux.Handle("PATCH /v1/accounts/{accountID}/members/{userID}", a.member(identity.MinRoleChangeRole, a.changeRole))
	// Any member may remove themselves (leave); the domain asks for admin
	// when the member named is someone else.
	mux.Handle("DELETE /v1/accounts/{accountID}/members/{userID}", a.member(identity.MinRoleLeave, a.removeMember))
	mux.Handle("GET /v1/accounts/{accountID}/invitations", a.member(identity.MinRoleInvite, a.listInvitations))
	mux.Handle("POST /v1/accounts/{accountID}/invitations", a.member(identity.MinRoleInvite, a.idempotentFor(a.invite)))
	mux.Handle("DELETE /v1/accounts/{accountID}/invitations/{invitationID}", a.member(identity.MinRoleInvite, a.revokeInvitation))
	mux.Handle("POST /v1/accounts/{accountID}/invitations/{invitationID}/resend", a.member(identity.MinRoleInvite, a.resendInvitation))
	mux.Handle("POST /v1/invitations/accept", a.authenticated(a.acceptInvitation))
	mux.HandleFunc("POST /v1/invitations/preview", a.previewInvitation)
	mux.Handle("POST /v1/invitations/decline", a.authenticated(a.declineInvitation))

	// The credential lifecycle (lifecycle.go). The token routes need no
	// session: the token is the credential.
	mux.HandleFunc("POST /v1/email/verify", a.verifyEmail)
	mux.Handle("POST /v1/me/email/verification", a.authenticated(a.resendVerification))
	mux.HandleFunc("POST /v1/password/reset", a.requestPasswordReset)
	mux.HandleFunc("POST /v1/password/reset/confirm", a.confirmPasswordReset)
	mux.Handle("POST /v1/me/email", a.authenticated(a.requestEmailChange))
	mux.HandleFunc("POST /v1/email/change/confirm", a.confirmEmailChange)

	// MFA and API keys (identity-lifecycle.md §4, §5).
	mux.HandleFunc("POST /v1/session/mfa", a.loginMFA)
	mux.Handle("GET /v1/me/mfa", a.authenticated(a.mfaStatus))
	mux.Handle("POST /v1/me/mfa/totp", a.authenticated(a.enrolTOTP))
	mux.Handle("POST /v1/me/mfa/totp/confirm", a.authenticated(a.confirmTOTP))
	mux.Handle("DELETE /v1/me/mfa/totp", a.authenticated(a.disableTOTP))
	mux.Handle("POST /v1/me/mfa/recovery_codes", a.authenticated(a.regenerateRecoveryCodes))
	mux.Handle("GET /v1/accounts/{accountID}/api_keys", a.member(identity.MinRoleAPIKeys, a.listAPIKeys))
	mux.Handle("POST /v1/accounts/{accountID}/api_keys", a.member(identity.MinRoleAPIKeys, a.createAPIKey))
	mux.Handle("DELETE /v1/accounts/{accountID}/api_keys/{keyID}", a.member(identity.MinRoleAPIKeys, a.revokeAPIKey))
}

func (a *api) idemFailure(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	httpx.WriteProblem(w, r, status, code, message, nil)
}

// idempotentPublic makes h, a route without a caller, honour
// Idempotency-Key: a record is found by key and body together, so a
// stranger guessing the key someone will sign up with cannot spoil it.
func (a *api) idempotentPublic(h http.Handler) http.Handler {
	if a.idem == nil {
		return h
	}
	return a.idem.WrapPublic(a.idemFailure, h)
}

// idempotentFor makes an authenticated handler honour Idempotency-Key
// with records scoped to the caller. It runs inside authenticated or
// member, which check the token, the session and the role on every
// request, replays included: a record replays only to the user who made
// it while they may still make the request, and nothing is read or written
// for a caller who may not.
func (a *api) idempotentFor(h principalHandler) principalHandler {
	if a.idem == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, p) })
		a.idem.Wrap(func(*http.Request) string { return "user:" + p.User.ID }, a.idemFailure, inner).ServeHTTP(w, r)
	}
}

// oidcRoutes adds client registration and, when provider is not nil, the
// OpenID Provider's endpoints (discovery, /oauth2/…), described by its
// discovery document rather than this service's OpenAPI document.
func (a *api) oidcRoutes(mux *http.ServeMux, store identity.OIDCStore, provider http.Handler) {
	o := &oidcAPI{api: a, store: store}
	mux.Handle("GET /v1/accounts/{accountID}/oidc_clients", a.member(identity.MinRoleInvite, o.list))
	mux.Handle("POST /v1/accounts/{accountID}/oidc_clients", a.member(identity.MinRoleInvite, a.idempotentFor(o.create)))
	mux.Handle("DELETE /v1/accounts/{accountID}/oidc_clients/{clientID}", a.member(identity.MinRoleInvite, o.revoke))
	// The caller's own consents: the applications they connected.
	mux.Handle("GET /v1/me/oidc_consents", a.authenticated(o.listConsents))
	mux.Handle("DELETE /v1/me/oidc_consents/{clientID}", a.authenticated(o.withdrawConsent))
	if provider != nil {
		mux.Handle("/.well-known/openid-configuration", provider)
		mux.Handle("/oauth2/", provider)
	}
}
