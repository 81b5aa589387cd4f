package gateway_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

const userID = "0b7c1f7e-6a55-4d3b-9f0e-3d7b1c2a9e10"

func TestTokenVerification(t *testing.T) {
	h := newHarness(t, setup{})
	ks := h.keys
	ks.Publish("k1", ks.AddKey(t, "ec1", "ES256"))
	testutil.Eventually(t, 10*time.Second, "ec1", func() bool {
		h.cache.RefreshEarly(t.Context())
		_, ok := h.cache.Lookup("ec1", time.Now())
		return ok
	})
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := ks.Claims(userID, 15*time.Minute)
		if edit != nil {
			edit(c)
		}
		return c
	}
	attacker := tokenstest.NewSigner(t, "EdDSA")
	edPub := ks.Key("k1").Private.Public()

	none := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil))
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hmacWithPublicKey := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString([]byte(edPub.(ed25519.PublicKey)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	tests := []struct {
		name  string
		token string
		code  string // "" means proxied
	}{
		{"OKEdDSA", ks.Token(t, "k1", claims(nil)), ""},
		{"OKES256", ks.Token(t, "ec1", claims(nil)), ""},
		{"OKExpiredWithinLeeway", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-10 * time.Second).Unix() })), ""},
		{"ErrForged", tokenstest.Sign(t, "EdDSA", "k1", attacker, claims(nil)), "unauthorized"},
		{"ErrExpired", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-2 * time.Minute).Unix() })), "unauthorized"},
		{"ErrNoExp", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { delete(c, "exp") })), "unauthorized"},
		{"ErrWrongIssuer", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), "unauthorized"},
		{"ErrNoIssuer", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { delete(c, "iss") })), "unauthorized"},
		{"ErrNoSubject", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { delete(c, "sub") })), "unauthorized"},
		{"ErrIssuedInTheFuture", ks.Token(t, "k1", claims(func(c jwt.MapClaims) { c["iat"] = time.Now().Add(10 * time.Minute).Unix() })), "unauthorized"},
		{"ErrAlgNone", none(), "unauthorized"},
		{"ErrHS256KeyedWithPublicKey", hmacWithPublicKey(), "unauthorized"},
		{"ErrES256UnderEdDSAKid", tokenstest.Sign(t, "ES256", "k1", ks.Key("ec1").Private, claims(nil)), "unauthorized"},
		{"ErrEdDSAUnderES256Kid", tokenstest.Sign(t, "EdDSA", "ec1", ks.Key("k1").Private, claims(nil)), "unauthorized"},
		{"ErrUnknownKid", tokenstest.Sign(t, "EdDSA", "nope", attacker, claims(nil)), "unauthorized"},
		{"ErrNoKid", tokenstest.Sign(t, "EdDSA", "", ks.Key("k1").Private, claims(nil)), "unauthorized"},
		{"ErrGarbage", "not.a.token", "unauthorized"},
		{"ErrNoToken", "", "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.identity.count()
			w := h.do(t, http.MethodGet, "/v1/me", tt.token, nil)
			if tt.code == "" {
				wantUpstream(t, w, "identity")
				if got := h.identity.last(t).Header.Get("Authorization"); got != "Bearer "+tt.token {
					t.Errorf("upstream Authorization = %q, want the caller's bearer token", got)
				}
				return
			}
			wantProblem(t, w, http.StatusUnauthorized, tt.code)
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if h.identity.count() != before {
				t.Error("a refused request reached the upstream")
			}
		})
	}

	t.Run("ErrNotBearer", func(t *testing.T) {
		w := h.do(t, http.MethodGet, "/v1/me", "", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"})
		wantProblem(t, w, http.StatusUnauthorized, "unauthorized")
	})
}

func TestKeySetOutage(t *testing.T) {
	h := newHarness(t, setup{keyMode: tokenstest.Fail})
	testutil.Eventually(t, 10*time.Second, "a failed fetch", func() bool { return h.keys.Hits() > 0 })

	for _, tok := range []string{h.token(t), "garbage"} {
		w := h.do(t, http.MethodGet, "/v1/me", tok, nil)
		wantProblem(t, w, http.StatusServiceUnavailable, "unavailable")
		ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
		if err != nil || ra < 1 {
			t.Fatalf("Retry-After = %q, want whole seconds >= 1", w.Header().Get("Retry-After"))
		}
	}
	if w := h.do(t, http.MethodGet, "/healthz", "", nil); w.Code != http.StatusOK {
		t.Fatalf("/healthz = %d during a key-set outage, want 200", w.Code)
	}
	w := h.do(t, http.MethodGet, "/readyz", "", nil)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d, want 503", w.Code)
	}
	var ready struct {
		Status string
		Deps   map[string]string
	}
	if err := json.Unmarshal(w.Body.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	if ready.Status != "unavailable" || ready.Deps["key_set"] != "unavailable" {
		t.Fatalf("/readyz body = %s", w.Body.String())
	}
	if _, ok := ready.Deps["redis"]; ok {
		t.Error("/readyz lists redis although it is not configured")
	}
	// Public routes need no key set.
	wantUpstream(t, h.do(t, http.MethodPost, "/v1/users", "", nil), "identity")

	h.keys.SetMode(tokenstest.Serve)
	testutil.Eventually(t, 10*time.Second, "recovery", func() bool { return h.cache.Status(time.Now()).Usable })
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", h.token(t), nil), "identity")
	if w := h.do(t, http.MethodGet, "/readyz", "", nil); w.Code != http.StatusOK {
		t.Fatalf("/readyz = %d after recovery, want 200", w.Code)
	}
}

func TestKeySetExpiredAfterFailedRefresh(t *testing.T) {
	h := newHarness(t, setup{ttl: 400 * time.Millisecond})
	tok := h.token(t)
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", tok, nil), "identity")
	h.keys.SetMode(tokenstest.Fail)
	testutil.Eventually(t, 10*time.Second, "503 after expiry", func() bool {
		return h.do(t, http.MethodGet, "/v1/me", tok, nil).Code == http.StatusServiceUnavailable
	})
	wantProblem(t, h.do(t, http.MethodGet, "/v1/me", tok, nil), http.StatusServiceUnavailable, "unavailable")
}

func TestKeySetUnparseableAnswerKeepsGoodKeys(t *testing.T) {
	h := newHarness(t, setup{})
	tok := h.token(t)
	h.keys.SetMode(tokenstest.Garbage)
	before := h.keys.Hits()
	// An unknown kid forces an early refresh, which now reads garbage.
	unknown := tokenstest.Sign(t, "EdDSA", "k9", tokenstest.NewSigner(t, "EdDSA"), h.keys.Claims(userID, time.Minute))
	wantProblem(t, h.do(t, http.MethodGet, "/v1/me", unknown, nil), http.StatusUnauthorized, "unauthorized")
	if h.keys.Hits() == before {
		t.Fatal("the unknown kid did not trigger a refresh")
	}
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", tok, nil), "identity")
}

func TestKeyRotationWithoutRestart(t *testing.T) {
	h := newHarness(t, setup{ttl: 500 * time.Millisecond})
	old := h.token(t)
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", old, nil), "identity")

	// Identity rotates: both keys published, new tokens signed with k2.
	h.keys.Publish("k1", h.keys.AddKey(t, "k2", "EdDSA"))
	fresh := h.keys.Token(t, "k2", h.keys.Claims(userID, 15*time.Minute))
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", fresh, nil), "identity")
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", old, nil), "identity")

	// Identity withdraws k1: within one TTL its tokens stop verifying.
	h.keys.Publish("k2")
	testutil.Eventually(t, 10*time.Second, "k1 withdrawn", func() bool {
		return h.do(t, http.MethodGet, "/v1/me", old, nil).Code == http.StatusUnauthorized
	})
	wantUpstream(t, h.do(t, http.MethodGet, "/v1/me", fresh, nil), "identity")
}

func TestRouting(t *testing.T) {
	h := newHarness(t, setup{})
	tok := h.token(t)
	tests := []struct {
		method, path string
		auth         bool
		upstream     string
	}{
		{"GET", "/v1/operator/entitlements", true, "box"},
		{"POST", "/v1/operator/entitlements/abc/revoke", true, "box"},
		{"GET", "/v1/operator/releases", true, "box"},
		{"GET", "/v1/operator/releases/r1", true, "box"},
		{"GET", "/v1/operator/me", true, "identity"},
		{"GET", "/v1/accounts/a1/entitlements", true, "box"},
		{"POST", "/v1/accounts/a1/artifact_fetches", true, "box"},
		{"GET", "/v1/accounts/a1/audit-events", true, "box"},
		{"GET", "/v1/accounts/a1/releases/r1/artifacts", true, "box"},
		{"POST", "/v1/accounts/a1/approvals", true, "box"},
		{"POST", "/v1/accounts/a1/claims", true, "box"},
		{"GET", "/v1/accounts/a1/holdings", true, "box"},
		{"POST", "/v1/accounts/a1/installations", true, "box"},
		{"GET", "/v1/accounts/a1/installations", true, "box"},
		{"POST", "/v1/installations/i1/heartbeat", true, "box"},
		{"DELETE", "/v1/installations/i1", true, "box"},
		{"POST", "/v1/installations/i1/license", true, "box"},
		{"GET", "/v1/operator/installations", true, "box"},
		{"GET", "/v1/license/keys", false, "box"},
		{"POST", "/v1/operator/api_keys", true, "identity"},
		{"GET", "/v1/accounts/a1", true, "identity"},
		{"GET", "/v1/accounts/a1/members", true, "identity"},
		{"POST", "/v1/capabilities/redeem", false, "box"},
		{"GET", "/v1/capabilities/c1", true, "box"},
		{"POST", "/v1/users", false, "identity"},
		{"POST", "/v1/session", false, "identity"},
		{"DELETE", "/v1/session", true, "identity"},
		{"GET", "/v1/me", true, "identity"},
		{"GET", "/.well-known/jwks.json", false, "identity"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			if !tt.auth {
				w := h.do(t, tt.method, tt.path, "", nil)
				if tt.path == "/.well-known/jwks.json" {
					if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"keys"`) {
						t.Fatalf("jwks through the gateway = %d %s", w.Code, w.Body.String())
					}
					return
				}
				wantUpstream(t, w, tt.upstream)
				return
			}
			wantRefusal(t, h.do(t, tt.method, tt.path, "", nil), tt.upstream, http.StatusUnauthorized)
			w := h.do(t, tt.method, tt.path, tok, nil)
			wantUpstream(t, w, tt.upstream)
			rec := h.identity
			if tt.upstream == "box" {
				rec = h.box
			}
			if got := rec.last(t).URL.Path; got != tt.path {
				t.Errorf("upstream path = %q, want %q", got, tt.path)
			}
		})
	}

	t.Run("ErrUnknownRouteOutsideV1", func(t *testing.T) {
		wantProblem(t, h.do(t, "GET", "/admin", "", nil), http.StatusNotFound, gateway.CodeNotFound)
		wantProblem(t, h.do(t, "GET", "/auth/login", "", nil), http.StatusNotFound, gateway.CodeNotFound)
	})
	t.Run("ErrProbeMethod", func(t *testing.T) {
		wantProblem(t, h.do(t, "POST", "/healthz", "", nil), http.StatusMethodNotAllowed, gateway.CodeMethodNotAllowed)
	})
}

func TestUpstreamNotConfigured(t *testing.T) {
	h := newHarness(t, setup{noBox: true})
	wantBoxError(t, h.do(t, "GET", "/v1/accounts/a1/entitlements", h.token(t), nil), http.StatusNotFound, "not_found")
	wantUpstream(t, h.do(t, "GET", "/v1/me", h.token(t), nil), "identity")
}

// TestUpstreamDownIs503: platform.md section 7 says a dependency that is
// down is a 503; the edge says it in the route's envelope, never 502.
func TestUpstreamDownIs503(t *testing.T) {
	h := newHarness(t, setup{})
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	g := gateway.New(gateway.Options{
		IdentityURL: mustURL(t, deadURL),
		BoxURL:      mustURL(t, deadURL),
		Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:        h.cache,
		Limiter:     h.limiter,
	})
	for _, tt := range []struct{ name, path, service string }{
		{"Box", "/v1/operator/releases", "box"},
		{"Identity", "/v1/me", "identity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			r.Header.Set("Authorization", "Bearer "+h.token(t))
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			wantRefusal(t, w, tt.service, http.StatusServiceUnavailable)
			if w.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		})
	}
}

func TestForwardedHeaders(t *testing.T) {
	h := newHarness(t, setup{})
	tok := h.token(t)

	t.Run("TraceparentCreatedWhenAbsent", func(t *testing.T) {
		h.do(t, "GET", "/v1/me", tok, nil)
		tp := h.identity.last(t).Header.Get("traceparent")
		if _, _, _, ok := httpx.ParseTraceparent(tp); !ok {
			t.Fatalf("upstream traceparent = %q, want a valid one", tp)
		}
	})
	t.Run("TraceparentContinued", func(t *testing.T) {
		in := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		h.do(t, "GET", "/v1/me", tok, map[string]string{"traceparent": in})
		id, parent, _, ok := httpx.ParseTraceparent(h.identity.last(t).Header.Get("traceparent"))
		if !ok || id != "4bf92f3577b34da6a3ce929d0e0e4736" || parent == "00f067aa0ba902b7" {
			t.Fatalf("upstream traceparent = %q, want the caller's trace with the gateway's span", h.identity.last(t).Header.Get("traceparent"))
		}
	})
	t.Run("SpoofedForwardingHeadersDropped", func(t *testing.T) {
		h.do(t, "GET", "/v1/me", tok, map[string]string{
			"X-Forwarded-For":  "203.0.113.66",
			"X-Forwarded-Host": "evil.example",
			"Forwarded":        "for=203.0.113.66",
			"X-Real-Ip":        "203.0.113.66",
		})
		got := h.identity.last(t).Header
		if xff := got.Get("X-Forwarded-For"); xff != "192.0.2.10" {
			t.Errorf("upstream X-Forwarded-For = %q, want the socket peer only", xff)
		}
		if got.Get("Forwarded") != "" || got.Get("X-Forwarded-Host") == "evil.example" {
			t.Errorf("spoofed forwarding headers reached the upstream: %v", got)
		}
	})
}

// policyLimiter admits everything under whichever policy it is set to.
type policyLimiter struct {
	mu     sync.Mutex
	limit  int
	period time.Duration
}

func (l *policyLimiter) set(limit int, period time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit, l.period = limit, period
}

func (l *policyLimiter) Allow(context.Context, string) ratelimit.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ratelimit.Decision{Allowed: true, Limit: l.limit, Period: l.period, Remaining: l.limit - 1, ResetAfter: 1500 * time.Millisecond}
}

// The headers' policy values are rendered once per policy; a limiter that
// changes its policy must change them too.
func TestRateLimitHeadersFollowThePolicy(t *testing.T) {
	lim := &policyLimiter{}
	h := newHarness(t, setup{limiter: lim})
	tok := h.token(t)
	tests := []struct {
		limit  int
		period time.Duration
		want   map[string]string
	}{
		{600, time.Minute, map[string]string{"RateLimit-Limit": "600", "RateLimit-Remaining": "599", "RateLimit-Reset": "2", "RateLimit-Policy": "600;w=60"}},
		{600, time.Minute, map[string]string{"RateLimit-Limit": "600", "RateLimit-Policy": "600;w=60"}},
		{50, time.Second, map[string]string{"RateLimit-Limit": "50", "RateLimit-Remaining": "49", "RateLimit-Policy": "50;w=1"}},
		{50, time.Hour, map[string]string{"RateLimit-Limit": "50", "RateLimit-Policy": "50;w=3600"}},
	}
	for _, tt := range tests {
		lim.set(tt.limit, tt.period)
		w := h.do(t, "GET", "/v1/me", tok, nil)
		wantUpstream(t, w, "identity")
		for k, v := range tt.want {
			if got := w.Header().Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("policy %d/%v: %s = %q, want [%s]", tt.limit, tt.period, k, got, v)
			}
		}
	}
}

// TestRateLimitPerSessionAndAddress: a request counts against its
// session and its address, never its user, so a token that leaked (or
// outlived its logout) exhausts only its own session's budget.
func TestRateLimitPerSessionAndAddress(t *testing.T) {
	h := newHarness(t, setup{rateLimit: 3})
	tokA := h.sessionToken(t, userID, "5f0c6c36-3a8e-4a4e-9d55-8f1f0e5d2a11")
	tokB := h.sessionToken(t, userID, "6a1d7d47-4b9f-4b5f-8e66-9a2a1f6e3b22")
	tokC := h.sessionToken(t, "7d2f3c1a-0000-4000-8000-000000000001", "7b2e8e58-5ca0-4c60-9f77-ab3b2a7f4c33")
	from := func(addr string) map[string]string { return map[string]string{"RemoteAddr": addr + ":40000"} }
	for i := range 3 {
		w := h.do(t, "GET", "/v1/me", tokA, from("192.0.2.1"))
		wantUpstream(t, w, "identity")
		if got := w.Header().Get("RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Errorf("RateLimit-Remaining = %q after %d requests, want %d", got, i+1, 2-i)
		}
	}
	w := h.do(t, "GET", "/v1/me", tokA, from("192.0.2.1"))
	wantProblem(t, w, http.StatusTooManyRequests, "rate_limited")
	if ra, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After = %q, want whole seconds >= 1", w.Header().Get("Retry-After"))
	}
	// The same user's other session, from elsewhere, is unaffected.
	wantUpstream(t, h.do(t, "GET", "/v1/me", tokB, from("192.0.2.2")), "identity")
	// The spent session stays spent from a fresh address...
	wantProblem(t, h.do(t, "GET", "/v1/me", tokA, from("192.0.2.3")), http.StatusTooManyRequests, "rate_limited")
	// ...and the spent address refuses another session too.
	wantProblem(t, h.do(t, "GET", "/v1/me", tokC, from("192.0.2.1")), http.StatusTooManyRequests, "rate_limited")
	// On a box route the refusal is in box's envelope.
	wantBoxError(t, h.do(t, "GET", "/v1/operator/releases", tokA, from("192.0.2.4")), http.StatusTooManyRequests, "rate_limited")

	// A plat_ API key passes through unverified and has a budget of its
	// own: exhausting one key leaves another key alone.
	key1, key2 := "plat_"+strings.Repeat("a", 43), "plat_"+strings.Repeat("b", 43)
	for range 3 {
		wantUpstream(t, h.do(t, "GET", "/v1/accounts/a1", key1, from("192.0.2.5")), "identity")
	}
	if got := h.identity.last(t).Header.Get("Authorization"); got != "Bearer "+key1 {
		t.Errorf("upstream Authorization = %q, want the API key passed through", got)
	}
	wantProblem(t, h.do(t, "GET", "/v1/accounts/a1", key1, from("192.0.2.6")), http.StatusTooManyRequests, "rate_limited")
	wantUpstream(t, h.do(t, "GET", "/v1/accounts/a1", key2, from("192.0.2.7")), "identity")

	// Probes are never limited.
	for range 10 {
		if w := h.do(t, "GET", "/healthz", "", nil); w.Code != http.StatusOK {
			t.Fatalf("/healthz = %d, want 200", w.Code)
		}
	}
}

// TestRateLimitTrustedProxies keys anonymous callers by address under each
// TRUSTED_PROXIES setting while the caller spoofs X-Forwarded-For.
func TestRateLimitTrustedProxies(t *testing.T) {
	type req struct {
		remote, xff string
		want        int
	}
	parlor := []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("10.0.1.0/24")}
	tests := []struct {
		name    string
		trusted int
		nets    []netip.Prefix
		reqs    []req
	}{
		{"ZeroIgnoresSpoofedHeader", 0, nil, []req{
			{"192.0.2.10:1", "203.0.113.1", 200},
			{"192.0.2.10:2", "203.0.113.2", 429}, // a new spoofed address buys nothing
			{"192.0.2.11:1", "203.0.113.1", 200}, // a different socket peer is a different caller
		}},
		{"OneReadsLastHop", 1, nil, []req{
			{"10.0.0.1:1", "203.0.113.1, 198.51.100.7", 200},
			{"10.0.0.1:2", "203.0.113.99, 198.51.100.7", 429}, // spoofed first entry ignored
			{"10.0.0.1:3", "198.51.100.8", 200},               // the proxy saw another client
			{"10.0.0.2:1", "198.51.100.7", 429},               // same client behind another proxy replica
		}},
		{"OneFallsBackToPeerWithoutHeader", 1, nil, []req{
			{"10.0.0.3:1", "", 200},
			{"10.0.0.3:2", "", 429},
		}},
		// parlor (10.0.0.5) calls the API for every browser, appending the
		// address it was reached from (the edge, 10.0.1.2) to the chain.
		{"AddressesEachBrowserItsOwnBudget", 0, parlor, []req{
			{"10.0.0.5:1", "198.51.100.20, 10.0.1.2", 200},
			{"10.0.0.5:2", "198.51.100.21, 10.0.1.2", 200}, // another browser, through the same parlor
			{"10.0.0.5:3", "198.51.100.20, 10.0.1.2", 429},
		}},
		{"AddressesIgnoreAnUntrustedPeersHeader", 0, parlor, []req{
			{"192.0.2.30:1", "198.51.100.30", 200},
			{"192.0.2.30:2", "198.51.100.31", 429}, // not a trusted proxy: its header buys nothing
		}},
		{"AddressesIgnoreWhatTheBrowserWrote", 0, parlor, []req{
			{"10.0.0.5:1", "203.0.113.1, 198.51.100.40", 200},
			{"10.0.0.5:2", "203.0.113.2, 198.51.100.40", 429}, // the spoofed entry left of the browser's
		}},
		{"AddressesAllTrustedIsTheFirst", 0, parlor, []req{
			{"10.0.0.5:1", "10.0.1.7, 10.0.1.2", 200},
			{"10.0.0.5:2", "10.0.1.8, 10.0.1.2", 200},
			{"10.0.0.5:3", "10.0.1.7", 429},
		}},
		{"TwoShorterChainFallsBackToPeer", 2, nil, []req{
			{"10.0.0.4:1", "198.51.100.9", 200},
			{"10.0.0.4:2", "198.51.100.10", 429},
			{"10.0.0.4:3", "198.51.100.11, 10.9.9.9", 200},
			{"10.0.0.4:4", "203.0.113.5, 198.51.100.11, 10.9.9.8", 429},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, setup{rateLimit: 1, trusted: tt.trusted, trustedNet: tt.nets})
			for i, rq := range tt.reqs {
				hdr := map[string]string{"RemoteAddr": rq.remote}
				if rq.xff != "" {
					hdr["X-Forwarded-For"] = rq.xff
				}
				w := h.do(t, "POST", "/v1/users", "", hdr)
				if w.Code != rq.want {
					t.Fatalf("request %d (%s, XFF %q): status %d, want %d", i, rq.remote, rq.xff, w.Code, rq.want)
				}
			}
		})
	}
}

func TestBrowserRoutesAbsentWithoutRedis(t *testing.T) {
	h := newHarness(t, setup{})
	for _, p := range []struct{ method, path string }{{"POST", "/auth/login"}, {"POST", "/auth/logout"}, {"GET", "/auth/session"}} {
		wantProblem(t, h.do(t, p.method, p.path, "", nil), http.StatusNotFound, gateway.CodeNotFound)
	}
	if h.gw.BrowserSessions() {
		t.Fatal("BrowserSessions() = true without a session store")
	}
}
