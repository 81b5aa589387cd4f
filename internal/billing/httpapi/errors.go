package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from billing's error codes to HTTP statuses,
// answered as application/problem+json (operations.md §3).
var statusOf = map[string]int{
	billing.CodeUnauthenticated:  http.StatusUnauthorized,
	billing.CodeForbidden:        http.StatusForbidden,
	billing.CodeNotFound:         http.StatusNotFound,
	billing.CodeConflict:         http.StatusConflict,
	billing.CodeValidation:       http.StatusUnprocessableEntity,
	billing.CodePersonalAccount:  http.StatusUnprocessableEntity,
	billing.CodeInvalidSignature: http.StatusBadRequest,
	billing.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	billing.CodeUnavailable:      http.StatusServiceUnavailable,
}

// errorsOf is billing's error writer.
func errorsOf(logger *slog.Logger) service.Errors {
	return service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "billing", Logger: logger}
}
