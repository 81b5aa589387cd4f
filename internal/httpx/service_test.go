package httpx

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// envelope is a stand-in service envelope: the status, code and message
// as JSON, so a test can tell Finish's answers from net/http's.
func envelope(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("X-Envelope", "test")
	WriteJSON(w, status, map[string]string{"code": code, "message": message})
}

func testService() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 200, map[string]string{"id": r.PathValue("id")})
	})
	mux.HandleFunc("DELETE /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST /v1/panic", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	return Finish(mux, slog.New(slog.DiscardHandler), envelope)
}

func TestFinish(t *testing.T) {
	srv := httptest.NewUnstartedServer(testService())
	srv.Config = NewServer(testService(), slog.New(slog.DiscardHandler))
	srv.Start()
	defer srv.Close()
	tests := []struct {
		name       string
		method     string
		path       string
		header     string // a header value of this many bytes, when set
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{name: "OK", method: "GET", path: "/v1/things/1", wantStatus: 200},
		{name: "NotFound", method: "GET", path: "/v1/nothing", wantStatus: 404, wantCode: CodeNotFound},
		{name: "MethodNotAllowed", method: "PUT", path: "/v1/things/1", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "GET, HEAD, DELETE"},
		{name: "MethodNotAllowedPost", method: "POST", path: "/v1/things/1", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "GET, HEAD, DELETE"},
		{name: "Panic", method: "POST", path: "/v1/panic", wantStatus: 500, wantCode: CodeInternal},
		{name: "HeadersTooLarge", method: "GET", path: "/v1/things/1", header: strings.Repeat("a", MaxHeaderBytes+1), wantStatus: 431, wantCode: CodeHeadersTooLarge},
		{name: "HeadersWithinLimit", method: "GET", path: "/v1/things/1", header: strings.Repeat("a", MaxHeaderBytes-200), wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if tt.header != "" {
				req.Header.Set("X-Big", tt.header)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.wantStatus, body)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if tt.wantCode == "" {
				return
			}
			if env := res.Header.Get("X-Envelope"); env != "test" {
				t.Errorf("X-Envelope = %q: not written in the service's envelope", env)
			}
			var got map[string]string
			if err := json.Unmarshal(body, &got); err != nil || got["code"] != tt.wantCode {
				t.Errorf("body %s, want code %q", body, tt.wantCode)
			}
		})
	}
}

func TestSwitch(t *testing.T) {
	s := NewSwitch(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	get := func() int {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		return w.Code
	}
	if got := get(); got != 503 {
		t.Fatalf("before Set: %d, want 503", got)
	}
	s.Set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	if got := get(); got != 200 {
		t.Fatalf("after Set: %d, want 200", got)
	}
}
