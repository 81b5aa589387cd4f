package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
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

// fail answers err as a problem: an expected error with its status, a
// decoding error as it says, anything else as a logged, generic 500.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	var de *httpx.DecodeError
	if errors.As(err, &de) {
		httpx.WriteProblem(w, r, de.Status, de.Code, de.Message, nil)
		return
	}
	if e, ok := errs.As(err); ok {
		if status, known := statusOf[e.Code]; known {
			if e.Code == identity.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="identity"`)
			}
			if e.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+999_999_999)/1e9)))
			}
			httpx.WriteProblem(w, r, status, e.Code, e.Message, e.Fields)
			return
		}
	}
	if sqldb.IsUnavailable(err) {
		a.log.WarnContext(r.Context(), "database unavailable", "err", err, "method", r.Method, "path", r.URL.Path)
		a.unavailable(w, r)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The caller went away; nobody reads the answer.
		a.log.InfoContext(r.Context(), "request abandoned by the client", "path", r.URL.Path)
		return
	}
	a.log.ErrorContext(r.Context(), "internal error", "err", err, "method", r.Method, "path", r.URL.Path)
	writeProblem(w, r, http.StatusInternalServerError, httpx.CodeInternal, "an internal error occurred; it has been logged")
}

// unavailable answers a dependency outage.
func (a *api) unavailable(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	writeProblem(w, r, http.StatusServiceUnavailable, httpx.CodeUnavailable, "the service is temporarily unavailable; try again shortly")
}

// writeProblem is identity's envelope for refusals without field errors.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	httpx.WriteProblem(w, r, status, code, message, nil)
}
