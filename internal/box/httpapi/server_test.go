package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/httpx"
)

// TestServerEnvelope: the refusals no handler writes (oversized headers,
// a wrong method, routes while the database is awaited) are in box's
// {error:{code,message}} envelope too.
func TestServerEnvelope(t *testing.T) {
	ready := func(context.Context) httpx.Readiness {
		return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable"}}
	}
	tests := []struct {
		name       string
		deps       httpapi.Deps
		method     string
		path       string
		header     int
		wantStatus int
		wantCode   string
	}{
		{name: "HeadersTooLarge", method: "GET", path: "/healthz", header: httpx.MaxHeaderBytes + 1, wantStatus: 431, wantCode: "request_headers_too_large"},
		{name: "WaitingForDatabase", deps: httpapi.Deps{Waiting: true}, method: "GET", path: "/v1/operator/entitlements", wantStatus: 503, wantCode: "unavailable"},
		{name: "NoDatabase", method: "GET", path: "/v1/operator/entitlements", wantStatus: 404, wantCode: "not_found"},
		{name: "WrongMethodOnProbe", method: "POST", path: "/readyz", wantStatus: 405, wantCode: "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			tt.deps.Logger, tt.deps.Ready = logger, ready
			srv := httptest.NewUnstartedServer(nil)
			srv.Config = httpx.NewServer(httpapi.NewServer(tt.deps), logger)
			srv.Start()
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if tt.header > 0 {
				req.Header.Set("X-Big", strings.Repeat("a", tt.header))
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			var got struct {
				Error struct{ Code, Message string }
			}
			if res.StatusCode != tt.wantStatus || json.Unmarshal(body, &got) != nil || got.Error.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d with code %q", res.StatusCode, body, tt.wantStatus, tt.wantCode)
			}
		})
	}
}
