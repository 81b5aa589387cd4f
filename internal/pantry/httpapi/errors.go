package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from pantry's error codes to HTTP statuses.
var statusOf = map[string]int{
	pantry.CodeUnauthenticated:   http.StatusUnauthorized,
	pantry.CodeForbidden:         http.StatusForbidden,
	pantry.CodeInsufficientScope: http.StatusForbidden,
	pantry.CodeNotFound:          http.StatusNotFound,
	pantry.CodeSlugTaken:         http.StatusConflict,
	pantry.CodeConflict:          http.StatusConflict,
	pantry.CodeValidation:        http.StatusUnprocessableEntity,
	pantry.CodeLogoNotPublic:     http.StatusUnprocessableEntity,
	pantry.CodeUnavailable:       http.StatusServiceUnavailable,
}

// errorsOf is pantry's error writer: the kit's, in application/problem+json.
func errorsOf(logger *slog.Logger) service.Errors {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "pantry", Logger: logger}
}
