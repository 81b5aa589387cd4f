package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/sqldb"
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

// fail answers err as a problem: a decoding error as it says, an expected
// error with its status, a database outage or timeout as 503, anything
// else as a logged, generic 500.
func fail(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var de *httpx.DecodeError
	if errors.As(err, &de) {
		httpx.WriteProblem(w, r, de.Status, de.Code, de.Message, nil)
		return
	}
	if e, ok := errs.As(err); ok {
		if status, known := statusOf[e.Code]; known {
			if e.Code == courier.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="courier"`)
			}
			httpx.WriteProblem(w, r, status, e.Code, e.Message, e.Fields)
			return
		}
	}
	if sqldb.IsUnavailable(err) || (errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil) {
		logger.WarnContext(r.Context(), "database unavailable", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
		w.Header().Set("Retry-After", "1")
		httpx.WriteProblem(w, r, http.StatusServiceUnavailable, courier.CodeUnavailable, "the service is temporarily unavailable; try again shortly", nil)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		logger.InfoContext(r.Context(), "request abandoned by the client", "path", r.URL.Path)
		return
	}
	logger.ErrorContext(r.Context(), "internal error", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
	internalError(w, r)
}

func internalError(w http.ResponseWriter, r *http.Request) {
	httpx.WriteProblem(w, r, http.StatusInternalServerError, "internal", "an internal error occurred; it has been logged", nil)
}
