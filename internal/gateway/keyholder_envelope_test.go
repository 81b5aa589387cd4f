package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestKeyholderV1AnswersInBoxEnvelope: keyholder's /v1 routes answer in
// box's {error: {code, message}} envelope (keyholder passes box's refusals
// on with box's codes), so the edge's own refusals there do too (/v2 keeps
// the OCI envelope: TestRegistryAnswersInOCIEnvelope). A client of keyholder then reads one shape
// whoever answered.
func TestKeyholderV1AnswersInBoxEnvelope(t *testing.T) {
	tests := []struct {
		name         string
		rateLimit    int
		unset        []string
		method, path string
		status       int
		code         string
	}{
		{"ErrPullsWithoutToken", 10000, nil, "GET", "/v1/accounts/00000000-0000-4000-8000-000000000000/pulls", http.StatusUnauthorized, "unauthenticated"},
		{"ErrExchangeUpstreamUnset", 10000, []string{"keyholder"}, "POST", "/v1/exchange", http.StatusNotFound, "not_found"},
		{"ErrExchangeRateLimited", 1, nil, "POST", "/v1/exchange", http.StatusTooManyRequests, "rate_limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, recs, g := fiveUpstreams(t, tt.rateLimit, tt.unset...)
			if tt.status == http.StatusTooManyRequests {
				wantUpstream(t, serve(g, tt.method, tt.path, ""), "keyholder") // spends the allowance of 1
			}
			before := recs["keyholder"].count()
			w := serve(g, tt.method, tt.path, "")
			wantBoxError(t, w, tt.status, tt.code)
			if tt.status == http.StatusUnauthorized {
				if got := w.Header().Get("WWW-Authenticate"); got != `Bearer realm="keyholder"` {
					t.Errorf("WWW-Authenticate = %q, want the keyholder realm", got)
				}
			}
			if recs["keyholder"].count() != before {
				t.Error("a refused request reached keyholder")
			}
		})
	}
}

// TestCredentialEndsWithItsOwnBasicAuth: DELETE /v1/credentials/{username}
// carries the credential's Basic auth, not a bearer (keyholder.md §2), so
// the edge passes it to keyholder, which checks it.
func TestCredentialEndsWithItsOwnBasicAuth(t *testing.T) {
	_, recs, g := fiveUpstreams(t, 10000)
	r := httptest.NewRequest("DELETE", "/v1/credentials/cap_00000000-0000-4000-8000-000000000000", nil)
	r.RemoteAddr = "192.0.2.50:1"
	r.SetBasicAuth("cap_00000000-0000-4000-8000-000000000000", "secret")
	w := httptest.NewRecorder()
	before := recs["keyholder"].count()
	g.ServeHTTP(w, r)
	wantUpstream(t, w, "keyholder")
	if recs["keyholder"].count() != before+1 {
		t.Error("the request did not reach keyholder")
	}
}
