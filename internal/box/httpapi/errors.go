package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/sqldb"
)

const (
	codeInternal   = "internal"
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
	box.CodeUnprocessable:       http.StatusUnprocessableEntity,
	box.CodeUnavailable:         http.StatusServiceUnavailable,
}

// errorBody is box's error envelope.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeEnvelope(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// writeError answers err: a request-body problem with its own status, a box
// error by the table, anything else as a logged, generic 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var de *httpx.DecodeError
	if errors.As(err, &de) {
		writeEnvelope(w, de.Status, de.Code, de.Message)
		return
	}
	if e, ok := errs.As(err); ok {
		if status, ok := statusOf[e.Code]; ok {
			writeEnvelope(w, status, e.Code, e.Message)
			return
		}
	}
	if sqldb.IsUnavailable(err) {
		logger.WarnContext(r.Context(), "database unavailable", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, box.CodeUnavailable, msgUnavailable)
		return
	}
	logger.ErrorContext(r.Context(), "internal error", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
	writeEnvelope(w, http.StatusInternalServerError, codeInternal, msgInternal)
}
