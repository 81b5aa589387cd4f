package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDecodeJSON(t *testing.T) {
	type item struct {
		Product string `json:"product"`
	}
	type body struct {
		Name  string            `json:"name"`
		Count int               `json:"count"`
		Items []item            `json:"items"`
		Meta  map[string]string `json:"meta"`
		Extra any               `json:"extra"`
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int // 0: decodes
		wantMsg     string
	}{
		{name: "OK", contentType: "application/json", body: `{"name":"a","count":2}`},
		{name: "OKNoContentType", body: `{"name":"a"}`},
		{name: "OKCharset", contentType: "application/json; charset=utf-8", body: `{"name":"a"}`},
		{name: "UnknownField", contentType: "application/json", body: `{"name":"a","owner":"b"}`, wantStatus: 400, wantMsg: `unknown field "owner"`},
		{name: "Malformed", body: `{"name":`, wantStatus: 400, wantMsg: "truncated"},
		{name: "Syntax", body: `{"name" "a"}`, wantStatus: 400, wantMsg: "not valid JSON"},
		{name: "WrongType", body: `{"count":"two"}`, wantStatus: 400, wantMsg: `field "count" must be of type number`},
		{name: "NotAnObject", body: `["a"]`, wantStatus: 400, wantMsg: "must be a JSON object"},
		{name: "Empty", body: ``, wantStatus: 400, wantMsg: "must be a JSON object"},
		{name: "TwoObjects", body: `{"name":"a"}{"name":"b"}`, wantStatus: 400, wantMsg: "single JSON object"},
		{name: "TrailingGarbage", body: `{"name":"a"} x`, wantStatus: 400, wantMsg: "single JSON object"},
		{name: "TooLarge", body: `{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, wantStatus: 413, wantMsg: "must not exceed"},
		{name: "OKNested", body: `{"items":[{"product":"box"}],"meta":{"a":"1","A":"2"},"extra":{"x":[1,{"y":2}]}}`},
		{name: "DuplicateKey", body: `{"name":"a","name":"b"}`, wantStatus: 400, wantMsg: `duplicate field "name"`},
		{name: "CaseOnlyMatch", body: `{"name":"identity","NAME":"courier"}`, wantStatus: 400, wantMsg: `unknown field "NAME"`},
		{name: "CaseOnlyMatchAlone", body: `{"Name":"a"}`, wantStatus: 400, wantMsg: `unknown field "Name"`},
		{name: "CaseOnlyMatchNested", body: `{"items":[{"product":"identity"},{"Product":"courier"}]}`, wantStatus: 400, wantMsg: `unknown field "Product"`},
		{name: "DuplicateKeyNested", body: `{"items":[{"product":"identity","product":"courier"}]}`, wantStatus: 400, wantMsg: `duplicate field "product"`},
		{name: "DuplicateKeyInMap", body: `{"meta":{"a":"1","a":"2"}}`, wantStatus: 400, wantMsg: `duplicate field "a"`},
		{name: "DuplicateKeyInAny", body: `{"extra":{"x":1,"x":2}}`, wantStatus: 400, wantMsg: `duplicate field "x"`},
		{name: "MalformedAfterKeys", body: `{"name":"a",}`, wantStatus: 400, wantMsg: "not valid JSON"},
		{name: "FormContentType", contentType: "application/x-www-form-urlencoded", body: `{"name":"a"}`, wantStatus: 415, wantMsg: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			var got body
			err := DecodeJSON(httptest.NewRecorder(), r, &got)
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("DecodeJSON: %v", err)
				}
				return
			}
			de, ok := err.(*DecodeError)
			if !ok {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if de.Status != tt.wantStatus || !strings.Contains(de.Message, tt.wantMsg) {
				t.Errorf("got %d %q, want %d containing %q", de.Status, de.Message, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

func TestWriteProblemCarriesTraceID(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	h := Observe(slog.New(slog.DiscardHandler), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, r, 404, "not_found", "no such thing", nil)
	}))
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "about:blank", "status": float64(404), "title": "Not Found", "detail": "no such thing", "code": "not_found", "trace_id": traceID}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	if _, ok := p["errors"]; ok {
		t.Errorf("errors present without field errors")
	}
}

func TestParseTraceparent(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false},
		{"garbage", false},
		{"", false},
	}
	for _, tt := range tests {
		if _, _, _, ok := ParseTraceparent(tt.in); ok != tt.want {
			t.Errorf("ParseTraceparent(%q) ok = %v, want %v", tt.in, ok, tt.want)
		}
	}
}

func TestTraceFromRequest(t *testing.T) {
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	tests := []struct {
		name        string
		traceparent string
		wantTraceID string // empty: a new one
		wantFlags   string
	}{
		{"no traceparent starts a trace", "", "", "01"},
		{"a malformed one starts a trace", "00-garbage-01", "", "01"},
		{"a valid one is continued", caller, "4bf92f3577b34da6a3ce929d0e0e4736", "00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 3 {
				r := httptest.NewRequest("GET", "/", nil)
				if tt.traceparent != "" {
					r.Header.Set("traceparent", tt.traceparent)
				}
				tr := TraceFromRequest(r)
				id, span, flags, ok := ParseTraceparent(tr.Traceparent())
				if !ok || id != tr.TraceID || span != tr.SpanID || flags != tt.wantFlags {
					t.Fatalf("Traceparent() = %q from %+v, want a valid one with flags %s", tr.Traceparent(), tr, tt.wantFlags)
				}
				if tt.wantTraceID != "" && id != tt.wantTraceID {
					t.Errorf("trace id = %s, want the caller's %s", id, tt.wantTraceID)
				}
				if span == "00f067aa0ba902b7" {
					t.Errorf("span id is the caller's; want one of this hop's own")
				}
				// Every request gets its own span id, and a new trace its own
				// trace id.
				for _, v := range []string{span, id} {
					if v == tt.wantTraceID {
						continue
					}
					if seen[v] {
						t.Errorf("id %s came twice", v)
					}
					seen[v] = true
				}
			}
		})
	}
}

func TestObserveRecoversPanics(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	internal := func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, r, 500, "internal", "an internal error occurred", nil)
	}
	h := Observe(logger, internal)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("boom")
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/explode?secret=s3cr3t", nil))
	if w.Code != 500 {
		t.Errorf("status = %d, want 500", w.Code)
	}
	if !strings.Contains(logs.String(), "panic serving request") || !strings.Contains(logs.String(), `"status":500`) {
		t.Errorf("panic not logged: %s", logs.String())
	}
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("the query string was logged")
	}
}

// TestServeDrainsInFlightRequests: cancelling the context stops accepting
// new connections but lets a request that already started finish.
func TestServeDrainsInFlightRequests(t *testing.T) {
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		if r.Context().Err() != nil {
			t.Errorf("request context cancelled by shutdown")
		}
		io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, h, slog.New(slog.DiscardHandler)) }()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	cancel()
	if body := <-got; body != "done" {
		t.Errorf("in-flight request got %q, want done", body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String()); err == nil {
		t.Errorf("server still accepts connections after shutdown")
	}
}

func TestReadyz(t *testing.T) {
	for _, ready := range []bool{true, false} {
		h := Readyz(func(context.Context) Readiness {
			return Readiness{Ready: ready, Body: map[string]string{"deps": "sqlite"}}
		})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		want := 200
		if !ready {
			want = 503
		}
		if w.Code != want {
			t.Errorf("ready=%v: status %d, want %d", ready, w.Code, want)
		}
	}
}
