package httpapi

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
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/logtest"
)

// identity's writer is the kit's: a validation failure carries its field
// errors in identity's envelope, and a request its client abandoned is answered
// with nothing and logged as abandoned, never as an internal error.
func TestErrorWriterFieldsAndAbandoned(t *testing.T) {
	fields := []errs.FieldError{{Field: "email", Code: "invalid"}, {Field: "name", Code: "required"}}
	write := func(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
		(&api{log: logger}).fail(w, r, err)
	}
	tests := []struct {
		name       string
		err        error
		abandon    bool
		wantStatus int
		wantFields []errs.FieldError
	}{
		{"validation", &errs.Error{Code: identity.CodeValidation, Message: "the request has invalid fields", Fields: fields}, false, http.StatusUnprocessableEntity, fields},
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
			var body struct {
				Errors []errs.FieldError `json:"errors"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			if got := body.Errors; !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("fields %v, want %v (%s)", got, tt.wantFields, rec.Body)
			}
		})
	}
}
