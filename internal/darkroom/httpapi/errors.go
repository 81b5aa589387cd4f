package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from darkroom's error codes to HTTP statuses.
var statusOf = map[string]int{
	darkroom.CodeUnauthenticated:     http.StatusUnauthorized,
	darkroom.CodeNotFound:            http.StatusNotFound,
	darkroom.CodeObjectAbsent:        http.StatusConflict,
	darkroom.CodeTooLarge:            http.StatusRequestEntityTooLarge,
	darkroom.CodeQuotaExceeded:       http.StatusRequestEntityTooLarge,
	darkroom.CodeUnsupportedType:     http.StatusUnsupportedMediaType,
	darkroom.CodeValidation:          http.StatusUnprocessableEntity,
	darkroom.CodeChecksumMismatch:    http.StatusUnprocessableEntity,
	darkroom.CodeContentTypeMismatch: http.StatusUnprocessableEntity,
	darkroom.CodeInvalidImage:        http.StatusUnprocessableEntity,
	darkroom.CodeUnavailable:         http.StatusServiceUnavailable,
}

// errorsOf is darkroom's error writer: the kit's, in application/problem+json.
func errorsOf(logger *slog.Logger) service.Errors {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "darkroom", Logger: logger}
}
