package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/service"
)

// Box's document fixes its own wording of the 500 and the 503.
const (
	msgInternal    = "internal error"
	msgUnavailable = "service temporarily unavailable"
)

// statusOf is the one table from box's error codes to HTTP statuses. A code
// missing here is a programming error and is answered as internal.
var statusOf = map[string]int{
	box.CodeUnauthenticated:     http.StatusUnauthorized,
	box.CodeForbidden:           http.StatusForbidden,
	box.CodeInsufficientScope:   http.StatusForbidden,
	box.CodeEntitlementRequired: http.StatusForbidden,
	box.CodeVersionNotGranted:   http.StatusForbidden,
	box.CodeNotFound:            http.StatusNotFound,
	box.CodeConflict:            http.StatusConflict,
	box.CodeCapabilityUsed:      http.StatusGone,
	box.CodeCapabilityExpired:   http.StatusGone,
	box.CodeInstallationLimit:   http.StatusConflict,
	box.CodeInstallationEnded:   http.StatusGone,
	box.CodeUnprocessable:       http.StatusUnprocessableEntity,
	box.CodeUnavailable:         http.StatusServiceUnavailable,
}

// errorsOf is box's error writer: the kit's, in the {error: {code,
// message, fields}} envelope, by statusOf, in box's wording.
func errorsOf(logger *slog.Logger) service.Errors {
	return service.Errors{
		Envelope:           service.ErrorObject,
		Status:             statusOf,
		InternalMessage:    msgInternal,
		UnavailableMessage: msgUnavailable,
		Logger:             logger,
	}
}

// writeEnvelope writes one refusal without field errors in box's
// envelope, which does not read the request.
func writeEnvelope(w http.ResponseWriter, status int, code, message string) {
	errorsOf(nil).Refuse(w, nil, status, code, message)
}

// writeError answers err (service.Errors.Write): a request-body problem
// with its own status, a box error by the table with its field errors, an
// outage as 503, a request the client abandoned with nothing, anything
// else as a logged, generic 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	errorsOf(logger).Write(w, r, err)
}
