package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/gatewaytest"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

func readyBody(t *testing.T, w *httptest.ResponseRecorder) (string, map[string]string) {
	t.Helper()
	var body struct {
		Status string            `json:"status"`
		Deps   map[string]string `json:"deps"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("/readyz body %q: %v", w.Body.String(), err)
	}
	return body.Status, body.Deps
}

// TestRateLimitSharedThroughRedis runs two gateway replicas over one Redis:
// a caller's allowance is spent across both.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "gateway")
	a := newHarness(t, setup{limiter: ratelimit.NewRedis(rdb, 4, prefix, nil)})
	b := gateway.New(gateway.Options{
		IdentityURL: mustURL(t, a.keys.URL),
		Verifier:    tokens.NewVerifier(a.cache, a.keys.Issuer),
		Keys:        a.cache,
		Limiter:     ratelimit.NewRedis(rdb, 4, prefix, nil),
	})
	tok := a.token(t)
	viaB := func() int {
		r := httptest.NewRequest("GET", "/v1/me", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		return w.Code
	}
	for i := range 2 {
		wantUpstream(t, a.do(t, "GET", "/v1/me", tok, nil), "identity")
		if code := viaB(); code != http.StatusOK {
			t.Fatalf("replica B request %d = %d, want 200", i, code)
		}
	}
	wantProblem(t, a.do(t, "GET", "/v1/me", tok, nil), http.StatusTooManyRequests, "rate_limited")
	if code := viaB(); code != http.StatusTooManyRequests {
		t.Fatalf("replica B over the shared limit = %d, want 429", code)
	}
	// The counters live in Redis under the test's prefix.
	keys, err := rdb.Keys(context.Background(), "*"+prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no limiter keys under %q in Redis (%v)", prefix, err)
	}
}

func TestReadinessWithRedis(t *testing.T) {
	rdb, _ := gatewaytest.Redis(t, "gateway")
	h := newHarness(t, setup{redisPing: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	w := h.do(t, "GET", "/readyz", "", nil)
	status, deps := readyBody(t, w)
	if w.Code != http.StatusOK || status != "ok" || deps["identity"] != "ok" || deps["redis"] != "ok" {
		t.Fatalf("/readyz = %d %s", w.Code, w.Body.String())
	}
}

// TestRedisDown needs no Redis: it points at a port nobody listens on.
// Readiness reports it but stays 200 "degraded" (operations.md section 8:
// bearer traffic still flows), and callers are limited per process instead
// of all being refused.
func TestRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	h := newHarness(t, setup{
		limiter:   ratelimit.NewRedis(rdb, 3, "test:", nil),
		redisPing: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	})
	w := h.do(t, "GET", "/readyz", "", nil)
	status, deps := readyBody(t, w)
	if w.Code != http.StatusOK || status != "degraded" || deps["redis"] != "unavailable" || deps["key_set"] != "ok" {
		t.Fatalf("/readyz = %d %s, want 200 degraded naming redis", w.Code, w.Body.String())
	}
	if w := h.do(t, "GET", "/healthz", "", nil); w.Code != http.StatusOK {
		t.Fatalf("/healthz = %d with Redis down, want 200", w.Code)
	}
	tok := h.token(t)
	for range 3 {
		wantUpstream(t, h.do(t, "GET", "/v1/me", tok, nil), "identity")
	}
	wantProblem(t, h.do(t, "GET", "/v1/me", tok, nil), http.StatusTooManyRequests, "rate_limited")
	other := h.sessionToken(t, "7d2f3c1a-0000-4000-8000-000000000002", "8c3f9f69-6db1-4d71-8a88-bc4c3b8a5d44")
	wantUpstream(t, h.do(t, "GET", "/v1/me", other, map[string]string{"RemoteAddr": "192.0.2.99:1"}), "identity")
}

// fakeLogin is identity's session surface as the gateway uses it.
type fakeLogin struct {
	t          testing.TB
	keys       *tokenstest.KeyServer
	mu         sync.Mutex
	issued     []string
	ended      []string
	loginXFF   string
	failDelete atomic.Bool
}

func (f *fakeLogin) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/session", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Email, Password string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Password != "right password" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"about:blank","status":401,"title":"Unauthorized","code":"invalid_credentials","detail":"wrong email or password","trace_id":"x"}`))
			return
		}
		tok := f.keys.Token(f.t, "k1", f.keys.Claims(userID, time.Hour))
		f.mu.Lock()
		f.issued = append(f.issued, tok)
		f.loginXFF = r.Header.Get("X-Forwarded-For")
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC()})
	})
	mux.HandleFunc("DELETE /v1/session", func(w http.ResponseWriter, r *http.Request) {
		if f.failDelete.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		f.mu.Lock()
		f.ended = append(f.ended, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestBrowserSession(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "gateway")
	f := &fakeLogin{t: t}
	h := newHarness(t, setup{sessions: session.New(rdb, prefix), identityMx: f.routes})
	f.keys = h.keys
	if !h.gw.BrowserSessions() {
		t.Fatal("BrowserSessions() = false with Redis and IDENTITY_URL")
	}
	const origin = "http://example.com" // httptest requests go to Host example.com
	login := func(password string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/auth/login", strings.NewReader(`{"email":"ada@example.com","password":"`+password+`"}`))
		r.RemoteAddr = "192.0.2.10:1234"
		r.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.gw.ServeHTTP(w, r)
		return w
	}

	wantProblem(t, login("right password", nil), http.StatusForbidden, gateway.CodeOriginRefused)
	wantProblem(t, login("right password", map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden, gateway.CodeOriginRefused)

	w := login("wrong", map[string]string{"Origin": origin})
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "invalid_credentials") {
		t.Fatalf("login with a wrong password = %d %s, want identity's 401 relayed", w.Code, w.Body.String())
	}
	if len(w.Result().Cookies()) != 0 {
		t.Fatal("a failed login set a cookie")
	}

	w = login("right password", map[string]string{"Origin": origin})
	if w.Code != http.StatusOK {
		t.Fatalf("login = %d %s", w.Code, w.Body.String())
	}
	setCookie := w.Header().Get("Set-Cookie")
	for _, attr := range []string{"__Host-gw_session=", "Path=/", "Secure", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(setCookie, attr) {
			t.Errorf("Set-Cookie %q lacks %s", setCookie, attr)
		}
	}
	if strings.Contains(setCookie, "Domain") {
		t.Errorf("Set-Cookie %q has a Domain, which __Host- forbids", setCookie)
	}
	cookie := w.Result().Cookies()[0]
	if f.loginXFF != "192.0.2.10" {
		t.Errorf("identity saw X-Forwarded-For %q, want the caller's address", f.loginXFF)
	}
	if strings.Contains(w.Body.String(), f.issued[0]) || strings.Contains(cookie.Value, f.issued[0]) {
		t.Fatal("the identity token reached the browser")
	}
	withCookie := func(hdr map[string]string) map[string]string {
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["Cookie"] = "theme=dark; " + cookie.Name + "=" + cookie.Value
		return hdr
	}

	if w := h.do(t, "GET", "/auth/session", "", withCookie(nil)); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"authenticated":true`) {
		t.Fatalf("/auth/session = %d %s", w.Code, w.Body.String())
	}

	// A cookie-authenticated read is forwarded with the identity token and
	// without the gateway's cookie.
	wantUpstream(t, h.do(t, "GET", "/v1/me", "", withCookie(nil)), "identity")
	up := h.identity.last(t)
	if got := up.Header.Get("Authorization"); got != "Bearer "+f.issued[0] {
		t.Fatalf("upstream Authorization = %q, want the stored identity token", got)
	}
	if c := up.Header.Get("Cookie"); strings.Contains(c, "gw_session") || !strings.Contains(c, "theme=dark") {
		t.Fatalf("upstream Cookie = %q, want other cookies kept and the session cookie removed", c)
	}

	// A stale identity __Host-session cookie beside it does not hide the
	// live gateway session.
	stale := map[string]string{"Cookie": "__Host-session=expired.token.value; " + cookie.Name + "=" + cookie.Value}
	wantUpstream(t, h.do(t, "GET", "/v1/me", "", stale), "identity")
	if got := h.identity.last(t).Header.Get("Authorization"); got != "Bearer "+f.issued[0] {
		t.Fatalf("upstream Authorization = %q with a stale identity cookie, want the session's token", got)
	}

	// Cookie-authenticated state changes need an allowed Origin.
	wantProblem(t, h.do(t, "POST", "/v1/accounts", "", withCookie(nil)), http.StatusForbidden, "forbidden")
	wantProblem(t, h.do(t, "DELETE", "/v1/accounts/a1", "", withCookie(map[string]string{"Origin": "https://evil.example"})), http.StatusForbidden, "forbidden")
	wantUpstream(t, h.do(t, "POST", "/v1/accounts", "", withCookie(map[string]string{"Origin": origin})), "identity")
	// A bearer request needs no Origin, and a bearer header wins over the cookie.
	wantUpstream(t, h.do(t, "POST", "/v1/accounts", h.token(t), nil), "identity")
	wantProblem(t, h.do(t, "GET", "/v1/me", "forged", withCookie(nil)), http.StatusUnauthorized, "unauthorized")

	// Logout needs the Origin too; if identity cannot end its session the
	// browser session is kept so the caller can retry.
	wantProblem(t, h.do(t, "POST", "/auth/logout", "", withCookie(nil)), http.StatusForbidden, gateway.CodeOriginRefused)
	f.failDelete.Store(true)
	wantProblem(t, h.do(t, "POST", "/auth/logout", "", withCookie(map[string]string{"Origin": origin})), http.StatusServiceUnavailable, gateway.CodeUnavailable)
	if w := h.do(t, "GET", "/auth/session", "", withCookie(nil)); w.Code != http.StatusOK {
		t.Fatalf("/auth/session after a failed logout = %d, want the session kept", w.Code)
	}
	f.failDelete.Store(false)

	w = h.do(t, "POST", "/auth/logout", "", withCookie(map[string]string{"Origin": origin}))
	if w.Code != http.StatusNoContent {
		t.Fatalf("logout = %d %s", w.Code, w.Body.String())
	}
	if c := w.Header().Get("Set-Cookie"); !strings.Contains(c, "__Host-gw_session=;") || !strings.Contains(c, "Max-Age=0") {
		t.Errorf("logout Set-Cookie = %q, want the cookie cleared", c)
	}
	if len(f.ended) != 1 || f.ended[0] != f.issued[0] {
		t.Fatalf("identity ended %v, want the stored token's session", f.ended)
	}
	if keys, _ := rdb.Keys(context.Background(), prefix+"*").Result(); len(keys) != 0 {
		t.Fatalf("Redis still holds %v after logout", keys)
	}
	wantProblem(t, h.do(t, "GET", "/auth/session", "", withCookie(nil)), http.StatusUnauthorized, gateway.CodeNotAuthenticated)
	wantProblem(t, h.do(t, "GET", "/v1/me", "", withCookie(nil)), http.StatusUnauthorized, "unauthorized")
	if w := h.do(t, "POST", "/auth/logout", "", withCookie(map[string]string{"Origin": origin})); w.Code != http.StatusNoContent {
		t.Fatalf("second logout = %d, want 204", w.Code)
	}
}

func TestBrowserSessionAllowedOrigins(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "gateway")
	f := &fakeLogin{t: t}
	h := newHarness(t, setup{sessions: session.New(rdb, prefix), identityMx: f.routes, origins: []string{"https://app.example.com"}})
	f.keys = h.keys
	post := func(origin string) int {
		r := httptest.NewRequest("POST", "/auth/login", strings.NewReader(`{"email":"a@example.com","password":"right password"}`))
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.gw.ServeHTTP(w, r)
		return w.Code
	}
	if code := post("http://example.com"); code != http.StatusForbidden {
		t.Fatalf("same-host origin not in the list = %d, want 403", code)
	}
	if code := post("https://app.example.com"); code != http.StatusOK {
		t.Fatalf("listed origin = %d, want 200", code)
	}
}

func TestBrowserSessionRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	f := &fakeLogin{t: t}
	h := newHarness(t, setup{sessions: session.New(rdb, "test:"), identityMx: f.routes})
	f.keys = h.keys
	r := httptest.NewRequest("POST", "/auth/login", strings.NewReader(`{"email":"a@example.com","password":"right password"}`))
	r.Header.Set("Origin", "http://example.com")
	w := httptest.NewRecorder()
	h.gw.ServeHTTP(w, r)
	wantProblem(t, w, http.StatusServiceUnavailable, gateway.CodeSessionStoreUnavailable)
	if len(f.ended) != 1 || f.ended[0] != f.issued[0] {
		t.Fatalf("identity sessions ended = %d, want the unused one ended", len(f.ended))
	}
	cookie := "__Host-gw_session=" + strings.Repeat("A", 43)
	wantProblem(t, h.do(t, "GET", "/v1/me", "", map[string]string{"Cookie": cookie}), http.StatusServiceUnavailable, "unavailable")
	// Bearer traffic does not need Redis.
	wantUpstream(t, h.do(t, "GET", "/v1/me", h.token(t), nil), "identity")
}
