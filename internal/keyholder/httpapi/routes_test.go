package httpapi_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/keyholder/httpapi"
)

// TestRefusalsInTheEnvelope: what no route serves is answered in box's
// envelope, which keyholder speaks under /v1.
func TestRefusalsInTheEnvelope(t *testing.T) {
	h := httpapi.NewServer(httpapi.Deps{Logger: slog.New(slog.DiscardHandler)})
	tests := []struct {
		name, method, path  string
		header              string
		wantStatus          int
		wantCode, wantAllow string
	}{
		{"UnknownPath", "GET", "/v1/nothing", "", 404, "not_found", ""},
		{"OtherMethod", "POST", "/healthz", "", 405, "method_not_allowed", "GET, HEAD"},
		{"HeadersTooLarge", "GET", "/healthz", strings.Repeat("x", 70<<10), 431, "request_headers_too_large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.header != "" {
				req.Header.Set("X-Big", tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || !strings.HasPrefix(rec.Body.String(), `{"error":{"code":"`+tt.wantCode+`"`) {
				t.Errorf("got %d %s, want %d %s", rec.Code, rec.Body, tt.wantStatus, tt.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got, tt.wantAllow)
			}
		})
	}
}
