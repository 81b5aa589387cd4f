package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/tokens"
)

// awaitingDocuments are routes of section 7 that identity's document does
// not describe yet: identity-lifecycle.md's features bring their paths. The
// test fails when one of them gains a document, so the list only shrinks.
var awaitingDocuments = map[string]bool{
	"/v1/email":                         true,
	"/v1/email/":                        true,
	"/v1/password":                      true,
	"/v1/password/":                     true,
	"/.well-known/openid-configuration": true,
	"/oauth2/":                          true,
	// operations.md section 5 routes box's /v1/capabilities/… subtree, of
	// which box documents only POST /v1/capabilities/redeem.
	"/v1/capabilities/": true,
}

// documentedElsewhere are routes whose contract is not an OpenAPI
// document of ours.
var documentedElsewhere = map[string]bool{
	// The OCI Distribution API: its contract is the Distribution spec.
	"/v2/": true,
	// The subtree's root, which routes to keyholder so that it answers its
	// own 404; only /v1/credentials/{username} is an operation.
	"/v1/credentials": true,
}

func fetchOpenAPI(t *testing.T, g http.Handler) []byte {
	t.Helper()
	w := serve(g, "GET", "/openapi.json", "")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("/openapi.json = %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	if _, err := openapitest.Load(w.Body.Bytes()); err != nil {
		t.Fatalf("the merged document does not load: %v", err)
	}
	return w.Body.Bytes()
}

// TestOpenAPIMatchesRoutingTable: every path of identity's, box's,
// courier's and keyholder's documents is in the gateway's document and routed to its service, and
// every route to those services is documented.
func TestOpenAPIMatchesRoutingTable(t *testing.T) {
	h := newHarness(t, setup{})
	doc := fetchOpenAPI(t, h.gw)
	var merged struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &merged); err != nil {
		t.Fatal(err)
	}

	covered := map[string]bool{}
	for service, raw := range apidocs.Public() {
		var d struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s's document: %v", service, err)
		}
		for p, item := range d.Paths {
			if p == "/healthz" || p == "/readyz" || p == "/openapi.json" {
				continue
			}
			if gateway.NotAtEdge[service][p] {
				// Never forwarded to the service, so never at the edge.
				if _, ok := merged.Paths[p]; ok {
					t.Errorf("%s is not at the edge, yet the gateway's document has it", p)
				}
				for method := range item {
					if rt, ok := gateway.RouteOf(strings.ToUpper(method), gateway.SamplePath(p)); ok && rt.Service == service && !strings.HasPrefix(method, "x-") && method != "parameters" {
						t.Errorf("%s %s is routed to %s at the edge, yet listed in NotAtEdge", method, p, service)
					}
				}
				continue
			}
			if _, ok := merged.Paths[p]; !ok {
				t.Errorf("%s documents %s; the gateway's document lacks it", service, p)
			}
			for method := range item {
				m := strings.ToUpper(method)
				if m == "PARAMETERS" || strings.HasPrefix(m, "X-") {
					continue
				}
				rt, ok := gateway.RouteOf(m, gateway.SamplePath(p))
				if !ok || rt.Service != service {
					t.Errorf("%s %s (documented by %s) is routed to %q", m, p, service, rt.Service)
					continue
				}
				covered[rt.Pattern] = true
			}
		}
	}

	var missing, stale []string
	for _, rt := range gateway.Routes() {
		if _, documented := apidocs.Public()[rt.Service]; !documented {
			continue // parlor serves pages, not an API
		}
		if documentedElsewhere[rt.Pattern] {
			continue
		}
		// A subtree ("/x/") is documented with its root ("/x").
		if strings.HasSuffix(rt.Pattern, "/") && covered[strings.TrimSuffix(rt.Pattern, "/")] {
			covered[rt.Pattern] = true
		}
		switch {
		case !covered[rt.Pattern] && !awaitingDocuments[rt.Pattern]:
			missing = append(missing, rt.Pattern+" → "+rt.Service)
		case covered[rt.Pattern] && awaitingDocuments[rt.Pattern]:
			stale = append(stale, rt.Pattern)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("routes without a document:\n\t%s", strings.Join(missing, "\n\t"))
	}
	if len(stale) > 0 {
		t.Errorf("documented now; remove from awaitingDocuments:\n\t%s", strings.Join(stale, "\n\t"))
	}
}

// TestOpenAPIDocumentsEdgeAnswers sends the edge's own refusals through a
// validator of the merged document: each must be declared, in the route's
// envelope.
func TestOpenAPIDocumentsEdgeAnswers(t *testing.T) {
	h := newHarness(t, setup{})
	doc := fetchOpenAPI(t, h.gw)
	tok := h.token(t)

	limited := gateway.New(gateway.Options{
		Documents:   apidocs.Public(),
		IdentityURL: mustURL(t, h.keys.URL),
		BoxURL:      mustURL(t, h.boxURL),
		Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:        h.cache,
		Limiter:     ratelimit.NewLocal(1),
	})
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	down := gateway.New(gateway.Options{
		Documents:    apidocs.Public(),
		IdentityURL:  mustURL(t, dead.URL),
		BoxURL:       mustURL(t, dead.URL),
		CourierURL:   mustURL(t, dead.URL),
		KeyholderURL: mustURL(t, dead.URL),
		Verifier:     tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:         h.cache,
		Limiter:      ratelimit.NewLocal(100),
	})
	tests := []struct {
		name         string
		g            http.Handler
		method, path string
		token        string
		status       int
		hdr          map[string]string
	}{
		{"IdentityUnauthorized", h.gw, "GET", "/v1/me", "", http.StatusUnauthorized, nil},
		{"BoxUnauthenticated", h.gw, "GET", "/v1/operator/releases", "", http.StatusUnauthorized, nil},
		{"IdentityUnavailable", down, "GET", "/v1/me", tok, http.StatusServiceUnavailable, nil},
		{"BoxUnavailable", down, "GET", "/v1/operator/releases", tok, http.StatusServiceUnavailable, nil},
		{"CourierUnauthorized", down, "GET", "/v1/me/preferences", "", http.StatusUnauthorized, nil},
		{"CourierUnavailable", down, "GET", "/v1/me/preferences", tok, http.StatusServiceUnavailable, nil},
		{"KeyholderUnauthorized", down, "GET", "/v1/accounts/00000000-0000-4000-8000-000000000000/pulls", "", http.StatusUnauthorized, nil},
		{"KeyholderUnavailable", down, "POST", "/v1/exchange", "", http.StatusServiceUnavailable, nil},
		{"IdentityRateLimited", limited, "GET", "/v1/me", tok, http.StatusTooManyRequests, nil},
		{"BoxRateLimited", limited, "GET", "/v1/operator/releases", tok, http.StatusTooManyRequests, nil},
		{"Readiness", h.gw, "GET", "/readyz", "", http.StatusOK, nil},
		{"UnknownPath", h.gw, "GET", "/nowhere", "", http.StatusNotFound, nil},
		{"IdentityCrossOrigin", h.gw, "POST", "/v1/accounts", "", http.StatusForbidden, map[string]string{"Cookie": "__Host-session=" + tok, "Origin": "https://evil.example"}},
		{"BoxCrossOrigin", h.gw, "POST", "/v1/operator/releases", "", http.StatusForbidden, map[string]string{"Cookie": "__Host-session=" + tok, "Origin": "https://evil.example"}},
		{"IdentityHeadersTooLarge", h.gw, "GET", "/v1/me", tok, http.StatusRequestHeaderFieldsTooLarge, map[string]string{"X-Big": strings.Repeat("a", gateway.MaxHeaderBytes)}},
		{"BoxHeadersTooLarge", h.gw, "GET", "/v1/operator/releases", tok, http.StatusRequestHeaderFieldsTooLarge, map[string]string{"X-Big": strings.Repeat("a", gateway.MaxHeaderBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status == http.StatusTooManyRequests {
				serve(tt.g, tt.method, tt.path, tt.token) // spends the allowance of 1
			}
			var body *strings.Reader
			if tt.method == "POST" {
				body = strings.NewReader(`{}`)
			} else {
				body = strings.NewReader("")
			}
			r := httptest.NewRequest(tt.method, tt.path, body)
			r.RemoteAddr = "192.0.2.50:1"
			if tt.method == "POST" {
				r.Header.Set("Content-Type", "application/json")
			}
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			for k, v := range tt.hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			openapitest.Wrap(t, doc, tt.g).ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d (body %s)", w.Code, tt.status, w.Body.String())
			}
		})
	}
}
