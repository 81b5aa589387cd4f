package httpx

import (
	"net/http"

	"github.com/platformco/platform/internal/errs"
)

// Problem is an application/problem+json body (RFC 9457) with the
// platform's extensions: a stable code, the trace id, and field errors.
type Problem struct {
	Type    string            `json:"type"`
	Status  int               `json:"status"`
	Title   string            `json:"title"`
	Detail  string            `json:"detail"`
	Code    string            `json:"code"`
	TraceID string            `json:"trace_id"`
	Errors  []errs.FieldError `json:"errors,omitempty"`
}

// WriteProblem writes a problem with status, code and detail; the trace id
// comes from the request's trace context.
func WriteProblem(w http.ResponseWriter, r *http.Request, status int, code, detail string, fields []errs.FieldError) {
	p := Problem{
		Type:    "about:blank",
		Status:  status,
		Title:   http.StatusText(status),
		Detail:  detail,
		Code:    code,
		TraceID: TraceFrom(r.Context()).TraceID,
		Errors:  fields,
	}
	writeEncoded(w, status, "application/problem+json", p)
}
