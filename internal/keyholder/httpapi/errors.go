package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/sqldb"
)

const (
	codeInternal = "internal"
	msgInternal  = "internal error"
)

// statusOf is the one table from keyholder's error codes to HTTP statuses,
// in box's {error: {code, message}} envelope (keyholder passes box's
// refusals on with box's codes). A code missing here is answered as
// internal.
var statusOf = map[string]int{
	keyholder.CodeUnauthenticated:   http.StatusUnauthorized,
	keyholder.CodeNotFound:          http.StatusNotFound,
	keyholder.CodeInsufficientScope: http.StatusForbidden,
	keyholder.CodeForbidden:         http.StatusForbidden,
	keyholder.CodeUnprocessable:     http.StatusUnprocessableEntity,
	keyholder.CodeCapabilityUsed:    http.StatusGone,
	keyholder.CodeCapabilityExpired: http.StatusGone,
	keyholder.CodeUnavailable:       http.StatusServiceUnavailable,
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  []errs.FieldError `json:"fields,omitempty"`
}

func writeEnvelope(w http.ResponseWriter, status int, code, message string, fields []errs.FieldError) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message, Fields: fields}})
}

// writeError answers err: a body problem with its own status, a keyholder
// error by the table, a database that does not answer as 503, anything
// else as a logged, generic 500.
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	var de *httpx.DecodeError
	if errors.As(err, &de) {
		writeEnvelope(w, de.Status, de.Code, de.Message, nil)
		return
	}
	if e, ok := errs.As(err); ok {
		if status, ok := statusOf[e.Code]; ok {
			writeEnvelope(w, status, e.Code, e.Message, e.Fields)
			return
		}
	}
	if sqldb.IsUnavailable(err) {
		logger.WarnContext(r.Context(), "database unavailable", "err", err.Error(),
			"method", r.Method, "path", r.URL.Path)
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, keyholder.CodeUnavailable, "service temporarily unavailable", nil)
		return
	}
	logger.ErrorContext(r.Context(), "internal error", "err", err.Error(),
		"method", r.Method, "path", r.URL.Path)
	writeEnvelope(w, http.StatusInternalServerError, codeInternal, msgInternal, nil)
}
