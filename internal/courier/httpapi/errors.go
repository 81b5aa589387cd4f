package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from courier's error codes to HTTP statuses.
// A code missing here is a programming error and is answered as internal.
var statusOf = map[string]int{
	courier.CodeValidation:   http.StatusUnprocessableEntity,
	courier.CodeUnauthorized: http.StatusUnauthorized,
	courier.CodeNotFound:     http.StatusNotFound,
	courier.CodeForbidden:    http.StatusForbidden,
	courier.CodeUnavailable:  http.StatusServiceUnavailable,
}

// fail answers err as a problem (service.Errors.Write): a decoding error
// as it says, an expected error with its status and field errors, every
// 401 challenging for the courier realm, a database outage or a
// dependency's deadline as 503, a request the client abandoned with
// nothing, anything else as a logged, generic 500.
func fail(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "courier", Logger: logger}.Write(w, r, err)
}
