package httpapi

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/service/servicetest"
)

// box's writer is the kit's: a validation failure carries its field
// errors in box's envelope, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func TestErrorWriterFieldsAndAbandoned(t *testing.T) {
	servicetest.ErrorWriterFieldsAndAbandoned(t, func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
		writeError(w, r, logger, err)
	}, box.CodeUnprocessable, servicetest.ErrorObjectFields)
}
