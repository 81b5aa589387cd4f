package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDarkroomRoutes: uploads need a caller at the edge; reads of media
// and their variants pass without one (darkroom decides); a gateway
// without DARKROOM_URL answers 404.
func TestDarkroomRoutes(t *testing.T) {
	dr := &recorder{name: "darkroom"}
	srv := httptest.NewServer(dr)
	t.Cleanup(srv.Close)
	h := newHarness(t, setup{darkroom: srv.URL})
	tok := h.token(t)
	for _, tc := range []struct {
		method, path string
		public       bool
	}{
		{"POST", "/v1/uploads", false},
		{"POST", "/v1/uploads/u1/complete", false},
		{"POST", "/v1/media", false},
		{"DELETE", "/v1/media/m1", false},
		{"POST", "/v1/media/m1/links", false},
		{"GET", "/v1/media/m1", true},
		{"GET", "/v1/media/m1/card", true},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			if tc.public {
				wantUpstream(t, h.do(t, tc.method, tc.path, "", nil), "darkroom")
			} else {
				wantRefusal(t, h.do(t, tc.method, tc.path, "", nil), "darkroom", http.StatusUnauthorized)
			}
			wantUpstream(t, h.do(t, tc.method, tc.path, tok, nil), "darkroom")
			if got := dr.last(t).URL.Path; got != tc.path {
				t.Errorf("upstream path %q, want %q", got, tc.path)
			}
		})
	}
	without := newHarness(t, setup{})
	wantRefusal(t, without.do(t, "GET", "/v1/media/m1", "", nil), "darkroom", http.StatusNotFound)
}
