package parlor_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestAPICallsCarryTheBrowsersAddress: parlor's calls to the API carry
// the X-Forwarded-For chain it received with the address it was reached
// from appended, so the gateway, trusting parlor, limits each browser on
// its own budget instead of every sign-in on parlor's one address.
func TestAPICallsCarryTheBrowsersAddress(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Forwarded-For"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"about:blank","status":401,"title":"Unauthorized","code":"invalid_credentials","detail":"wrong email or password"}`))
	}))
	t.Cleanup(api.Close)
	v := newVisitor(t, startParlor(t, api.URL))
	tests := []struct{ name, sent, want string }{
		{"Direct", "", "127.0.0.1"},
		{"BehindTheGateway", "198.51.100.7", "198.51.100.7, 127.0.0.1"},
		{"ChainKept", "203.0.113.9, 198.51.100.7", "203.0.113.9, 198.51.100.7, 127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			req, _ := http.NewRequest("POST", v.base+"/signin", strings.NewReader(url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.sent != "" {
				req.Header.Set("X-Forwarded-For", tt.sent)
			}
			v.send(req)
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 {
				t.Fatal("parlor made no API call")
			}
			for _, g := range got {
				if g != tt.want {
					t.Errorf("X-Forwarded-For = %q, want %q", g, tt.want)
				}
			}
		})
	}
}
