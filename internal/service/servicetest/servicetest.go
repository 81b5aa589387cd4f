// Package servicetest checks what every service's error writer owes, on
// the kit (service.Errors), from each service's own test.
package servicetest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/logtest"
)

// Writer is a service's error writer as its handlers call it.
type Writer func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error)

// ErrorWriterFieldsAndAbandoned: a validation failure (validationCode, the
// service's 422 code) carries its field errors in the service's envelope,
// which fieldsOf reads back, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func ErrorWriterFieldsAndAbandoned(t *testing.T, write Writer, validationCode string, fieldsOf func(body []byte) ([]errs.FieldError, error)) {
	t.Helper()
	fields := []errs.FieldError{{Field: "email", Code: "invalid"}, {Field: "name", Code: "required"}}
	tests := []struct {
		name       string
		err        error
		abandon    bool
		wantStatus int
		wantFields []errs.FieldError
	}{
		{"validation", &errs.Error{Code: validationCode, Message: "the request has invalid fields", Fields: fields}, false, http.StatusUnprocessableEntity, fields},
		{"abandoned", context.Canceled, true, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := logtest.New()
			req := httptest.NewRequest(http.MethodPost, "/v1/x", strings.NewReader("{}"))
			if tt.abandon {
				ctx, cancel := context.WithCancel(req.Context())
				cancel()
				req = req.WithContext(ctx)
			}
			rec := httptest.NewRecorder()
			write(rec, req, logger, tt.err)
			if tt.wantStatus == 0 {
				if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
					t.Errorf("wrote %d %v %q for an abandoned request, want nothing", rec.Code, rec.Header(), rec.Body)
				}
				if l := logs.String(); strings.Contains(l, "internal error") || strings.Contains(l, `"level":"ERROR"`) || !strings.Contains(l, "abandoned") {
					t.Errorf("logs %q, want the abandonment and no internal error", l)
				}
				return
			}
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			got, err := fieldsOf(rec.Body.Bytes())
			if err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			if !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("fields %v, want %v (%s)", got, tt.wantFields, rec.Body)
			}
		})
	}
}

// ErrorObjectFields reads the fields of box's {error: {code, message,
// fields}} envelope (service.ErrorObject).
func ErrorObjectFields(body []byte) ([]errs.FieldError, error) {
	var b struct {
		Error struct {
			Fields []errs.FieldError `json:"fields"`
		} `json:"error"`
	}
	err := json.Unmarshal(body, &b)
	return b.Error.Fields, err
}

// ProblemFields reads the field errors of the problem envelope
// (service.Problem: `errors`).
func ProblemFields(body []byte) ([]errs.FieldError, error) {
	var b struct {
		Errors []errs.FieldError `json:"errors"`
	}
	err := json.Unmarshal(body, &b)
	return b.Errors, err
}
