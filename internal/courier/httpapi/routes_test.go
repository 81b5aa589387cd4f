package httpapi_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/courier/httpapi"
)

// TestRefusalsInProblemJSON: what no route serves, and every /v1 route
// while the database has not answered, is refused in problem+json.
func TestRefusalsInProblemJSON(t *testing.T) {
	tests := []struct {
		name                string
		deps                httpapi.Deps
		method, path, big   string
		wantStatus          int
		wantCode, wantAllow string
	}{
		{"UnknownPath", httpapi.Deps{}, "GET", "/nothing", "", 404, "not_found", ""},
		{"OtherMethod", httpapi.Deps{}, "POST", "/healthz", "", 405, "method_not_allowed", "GET, HEAD"},
		{"HeadersTooLarge", httpapi.Deps{}, "GET", "/healthz", strings.Repeat("x", 70<<10), 431, "request_headers_too_large", ""},
		{"Waiting", httpapi.Deps{Waiting: true}, "POST", "/v1/emails", "", 503, "unavailable", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.deps.Logger = slog.New(slog.DiscardHandler)
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.big != "" {
				req.Header.Set("X-Big", tt.big)
			}
			rec := httptest.NewRecorder()
			httpapi.NewServer(tt.deps).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), `"code":"`+tt.wantCode+`"`) {
				t.Errorf("got %d %s %s, want %d %s in problem+json", rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.wantStatus, tt.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got, tt.wantAllow)
			}
		})
	}
}
