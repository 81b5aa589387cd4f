package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/service"
)

// keyholder words its 500 and its 503 as box does.
const (
	codeInternal   = httpx.CodeInternal
	msgInternal    = "internal error"
	msgUnavailable = "service temporarily unavailable"
)

// statusOf is the one table from keyholder's error codes to HTTP statuses,
// in box's {error: {code, message, fields}} envelope (keyholder passes
// box's refusals on with box's codes). A code missing here is answered as
// internal.
var statusOf = map[string]int{
	keyholder.CodeUnauthenticated:     http.StatusUnauthorized,
	keyholder.CodeNotFound:            http.StatusNotFound,
	keyholder.CodeInsufficientScope:   http.StatusForbidden,
	keyholder.CodeForbidden:           http.StatusForbidden,
	keyholder.CodeEntitlementRequired: http.StatusForbidden,
	keyholder.CodeVersionNotGranted:   http.StatusForbidden,
	keyholder.CodeUnprocessable:       http.StatusUnprocessableEntity,
	keyholder.CodeCapabilityUsed:      http.StatusGone,
	keyholder.CodeCapabilityExpired:   http.StatusGone,
	keyholder.CodeUnavailable:         http.StatusServiceUnavailable,
}

// errorsOf is keyholder's error writer under /v1: the kit's, in box's
// envelope, by statusOf, in box's wording. A 401's Basic challenge is the
// handler's (it names the registry), so the writer adds none.
func errorsOf(logger *slog.Logger) service.Errors {
	return service.Errors{
		Envelope:           service.ErrorObject,
		Status:             statusOf,
		InternalMessage:    msgInternal,
		UnavailableMessage: msgUnavailable,
		Logger:             logger,
	}
}

// writeEnvelope writes one refusal in box's envelope, which does not read
// the request.
func writeEnvelope(w http.ResponseWriter, status int, code, message string, fields []errs.FieldError) {
	errorsOf(nil).Refuse(w, nil, status, code, message, fields...)
}

// writeError answers err (service.Errors.Write): a body problem with its
// own status, a keyholder error by the table with its field errors, an
// outage as 503, a request the client abandoned with nothing, anything
// else as a logged, generic 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	errorsOf(logger).Write(w, r, err)
}
