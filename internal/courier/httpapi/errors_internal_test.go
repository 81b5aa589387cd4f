package httpapi

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/service/servicetest"
)

// courier's writer is the kit's: a validation failure carries its field
// errors in courier's envelope, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func TestErrorWriterFieldsAndAbandoned(t *testing.T) {
	servicetest.ErrorWriterFieldsAndAbandoned(t, func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
		fail(w, r, logger, err)
	}, courier.CodeValidation, servicetest.ProblemFields)
}
