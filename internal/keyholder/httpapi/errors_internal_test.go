package httpapi

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/service/servicetest"
)

// keyholder's writer is the kit's: a validation failure carries its field
// errors in keyholder's envelope, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func TestErrorWriterFieldsAndAbandoned(t *testing.T) {
	servicetest.ErrorWriterFieldsAndAbandoned(t, func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
		writeError(w, r, logger, err)
	}, keyholder.CodeUnprocessable, servicetest.ErrorObjectFields)
}
