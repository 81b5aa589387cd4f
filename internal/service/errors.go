package service

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/sqldb"
)

// Envelope writes a refusal in a service's shape.
type Envelope func(w http.ResponseWriter, r *http.Request, status int, code, message string, fields []errs.FieldError)

// Problem is the application/problem+json envelope (identity, courier).
func Problem(w http.ResponseWriter, r *http.Request, status int, code, message string, fields []errs.FieldError) {
	httpx.WriteProblem(w, r, status, code, message, fields)
}

// ErrorObject is the {"error":{"code","message","fields"}} envelope (box,
// keyholder).
func ErrorObject(w http.ResponseWriter, _ *http.Request, status int, code, message string, fields []errs.FieldError) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, errorObject{Error: errorDetail{Code: code, Message: message, Fields: fields}})
}

type errorObject struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  []errs.FieldError `json:"fields,omitempty"`
}

// The messages of the answers every service words the same.
const (
	MsgInternal    = "an internal error occurred; it has been logged"
	MsgUnavailable = "the service is temporarily unavailable; try again shortly"
)

// Errors answers a service's errors in its envelope, by its one table from
// error codes to statuses.
type Errors struct {
	Envelope Envelope
	// Status maps the service's codes to HTTP statuses; a code missing
	// here is a programming error and is answered as internal.
	Status map[string]int
	// Realm, when set, is the realm of the WWW-Authenticate challenge of
	// every 401 that has none yet.
	Realm string
	// InternalMessage and UnavailableMessage word the 500 and the 503 of
	// a service whose document fixes its own wording (box's);
	// MsgInternal and MsgUnavailable when empty.
	InternalMessage, UnavailableMessage string
	Logger                              *slog.Logger
}

// Write answers err: a request-body problem with its own status; a
// service error by the table, with its field errors and Retry-After; a
// database outage or a dependency's deadline as 503 unavailable with
// Retry-After: 1; a request its client abandoned with nothing (nobody
// reads the answer); anything else as a logged, generic 500.
func (e Errors) Write(w http.ResponseWriter, r *http.Request, err error) {
	var de *httpx.DecodeError
	if errors.As(err, &de) {
		e.Envelope(w, r, de.Status, de.Code, de.Message, nil)
		return
	}
	if se, ok := errs.As(err); ok {
		if status, known := e.Status[se.Code]; known {
			if se.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(int64((se.RetryAfter+999_999_999)/1e9), 10))
			}
			e.Refuse(w, r, status, se.Code, se.Message, se.Fields...)
			return
		}
	}
	switch {
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		e.Logger.InfoContext(r.Context(), "request abandoned by the client", "method", r.Method, "path", r.URL.Path)
	case sqldb.IsUnavailable(err) || (errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil):
		e.Logger.WarnContext(r.Context(), "dependency unavailable", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
		e.Unavailable(w, r)
	default:
		e.Logger.ErrorContext(r.Context(), "internal error", "err", err.Error(), "method", r.Method, "path", r.URL.Path)
		e.Refuse(w, r, http.StatusInternalServerError, httpx.CodeInternal, or(e.InternalMessage, MsgInternal))
	}
}

// Refuse writes one refusal in the envelope. It is the service's
// httpx.ErrorWriter (Finish) with no field errors.
func (e Errors) Refuse(w http.ResponseWriter, r *http.Request, status int, code, message string, fields ...errs.FieldError) {
	h := w.Header()
	if status == http.StatusUnauthorized && e.Realm != "" && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Bearer realm="`+e.Realm+`"`)
	}
	e.Envelope(w, r, status, code, message, fields)
}

// Writer is Refuse as an httpx.ErrorWriter.
func (e Errors) Writer() httpx.ErrorWriter {
	return func(w http.ResponseWriter, r *http.Request, status int, code, message string) {
		e.Refuse(w, r, status, code, message)
	}
}

// Unavailable answers an outage: 503 unavailable, Retry-After: 1. A
// service error the table maps to 503 carries Retry-After only when the
// error says when to retry (a dependency that is not configured will not
// be back in a second).
func (e Errors) Unavailable(w http.ResponseWriter, r *http.Request) {
	if w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	e.Refuse(w, r, http.StatusServiceUnavailable, httpx.CodeUnavailable, or(e.UnavailableMessage, MsgUnavailable))
}

// or is s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
