package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from identity's error codes to HTTP statuses.
var statusOf = map[string]int{
	identity.CodeValidation:         http.StatusUnprocessableEntity,
	identity.CodeUnauthorized:       http.StatusUnauthorized,
	identity.CodeForbidden:          http.StatusForbidden,
	identity.CodeNotFound:           http.StatusNotFound,
	identity.CodeConflict:           http.StatusConflict,
	identity.CodeInvitationExpired:  http.StatusGone,
	identity.CodeInvitationUsed:     http.StatusGone,
	identity.CodePersonalAccount:    http.StatusUnprocessableEntity,
	identity.CodeLocked:             http.StatusLocked,
	identity.CodeInvalidCredentials: http.StatusForbidden,

	identity.CodeTokenExpired:            http.StatusGone,
	identity.CodeTokenUsed:               http.StatusGone,
	identity.CodeEmailNotVerified:        http.StatusForbidden,
	identity.CodeInvitationEmailMismatch: http.StatusForbidden,
	identity.CodeRateLimited:             http.StatusTooManyRequests,
	identity.CodeInvalidCode:             http.StatusUnauthorized,
	// A sign-in's mfa_required is 401 with its challenge (failLogin); any
	// other route that needs the second factor answers 403.
	identity.CodeMFARequired:       http.StatusForbidden,
	identity.CodeInsufficientScope: http.StatusForbidden,
}

type api struct {
	svc  *identity.Service
	idem *idempotency.Store
	log  *slog.Logger
	// origin is identity's public origin (of its issuer), as originOf
	// writes it; cookie-borne state changes must come from it.
	origin string
}

// errorsOf is identity's error writer: the kit's, in problem+json, by
// statusOf, every 401 challenging for the identity realm.
func errorsOf(logger *slog.Logger) service.Errors {
	return service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "identity", Logger: logger}
}

// fail answers err as a problem (service.Errors.Write): an expected error
// with its status and field errors, a decoding error as it says, an outage
// as 503, an abandoned request with nothing, anything else as a logged,
// generic 500.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	errorsOf(a.log).Write(w, r, err)
}

// unavailable answers a dependency outage.
func (a *api) unavailable(w http.ResponseWriter, r *http.Request) {
	errorsOf(a.log).Unavailable(w, r)
}

// writeProblem is identity's envelope for refusals without field errors
// (httpx.Finish's).
func writeProblem(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	errorsOf(nil).Refuse(w, r, status, code, message)
}
