package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
)

// TestServerEnvelope: the refusals no handler writes (oversized headers,
// routes while the database is awaited) are problem+json too.
func TestServerEnvelope(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		deps       Deps
		path       string
		header     int
		wantStatus int
		wantCode   string
	}{
		{name: "HeadersTooLarge", path: "/healthz", header: httpx.MaxHeaderBytes + 1, wantStatus: 431, wantCode: "request_headers_too_large"},
		{name: "WaitingForDatabase", deps: Deps{Waiting: true}, path: "/v1/me", wantStatus: 503, wantCode: "unavailable"},
		{name: "WaitingKeySet", deps: Deps{Waiting: true}, path: "/.well-known/jwks.json", wantStatus: 503, wantCode: "unavailable"},
		{name: "NoDatabase", path: "/v1/me", wantStatus: 404, wantCode: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.deps.Logger = logger
			srv := httptest.NewUnstartedServer(nil)
			srv.Config = httpx.NewServer(NewServer(tt.deps), logger)
			srv.Start()
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
			if tt.header > 0 {
				req.Header.Set("X-Big", strings.Repeat("a", tt.header))
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("got %d %s, want %d problem+json: %s", res.StatusCode, res.Header.Get("Content-Type"), tt.wantStatus, body)
			}
			var p httpx.Problem
			if err := json.Unmarshal(body, &p); err != nil || p.Code != tt.wantCode || p.Status != tt.wantStatus {
				t.Errorf("body %s, want code %q", body, tt.wantCode)
			}
		})
	}
}
