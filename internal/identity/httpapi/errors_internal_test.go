package httpapi

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/service/servicetest"
)

// identity's writer is the kit's: a validation failure carries its field
// errors in identity's envelope, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func TestErrorWriterFieldsAndAbandoned(t *testing.T) {
	servicetest.ErrorWriterFieldsAndAbandoned(t, func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
		(&api{log: logger}).fail(w, r, err)
	}, identity.CodeValidation, servicetest.ProblemFields)
}
