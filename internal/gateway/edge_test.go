package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

// TestIdentityCookie: identity's own __Host-session cookie works at the
// edge like a bearer token, with the same cross-origin rule for state
// changes as the gateway's browser sessions (operations.md section 8).
func TestIdentityCookie(t *testing.T) {
	h := newHarness(t, setup{})
	tok := h.token(t)
	cookie := func(extra map[string]string) map[string]string {
		m := map[string]string{"Cookie": "__Host-session=" + tok}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	t.Run("OKReadsOnEveryService", func(t *testing.T) {
		wantUpstream(t, h.do(t, "GET", "/v1/me", "", cookie(nil)), "identity")
		wantUpstream(t, h.do(t, "GET", "/v1/operator/releases", "", cookie(nil)), "box")
		if got := h.box.last(t).Header.Get("Authorization"); got != "Bearer "+tok {
			t.Errorf("box received Authorization %q, want the cookie's token as a bearer", got)
		}
	})
	t.Run("ErrInvalidCookie", func(t *testing.T) {
		bad := map[string]string{"Cookie": "__Host-session=forged"}
		wantProblem(t, h.do(t, "GET", "/v1/me", "", bad), http.StatusUnauthorized, "unauthorized")
		wantBoxError(t, h.do(t, "GET", "/v1/operator/releases", "", bad), http.StatusUnauthorized, "unauthenticated")
	})

	tests := []struct {
		name string
		hdr  map[string]string
		ok   bool
	}{
		{"OKSecFetchSiteSameOrigin", map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"OKExactOrigin", map[string]string{"Origin": "http://example.com"}, true},
		{"ErrNoOrigin", nil, false},
		{"ErrOtherScheme", map[string]string{"Origin": "https://example.com"}, false},
		{"ErrOtherPort", map[string]string{"Origin": "http://example.com:8080"}, false},
		{"ErrOtherHost", map[string]string{"Origin": "http://evil.example"}, false},
		{"ErrCrossSite", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, false},
		{"ErrSameSiteIsNotSameOrigin", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idBefore, boxBefore := h.identity.count(), h.box.count()
			wi := h.do(t, "POST", "/v1/accounts", "", cookie(tt.hdr))
			wb := h.do(t, "POST", "/v1/accounts/a1/claims", "", cookie(tt.hdr))
			if tt.ok {
				wantUpstream(t, wi, "identity")
				wantUpstream(t, wb, "box")
				return
			}
			wantProblem(t, wi, http.StatusForbidden, "forbidden")
			wantBoxError(t, wb, http.StatusForbidden, "forbidden")
			if h.identity.count() != idBefore || h.box.count() != boxBefore {
				t.Error("a refused change reached an upstream")
			}
		})
	}
	t.Run("OKBearerNeedsNoOrigin", func(t *testing.T) {
		wantUpstream(t, h.do(t, "POST", "/v1/accounts", tok, map[string]string{"Origin": "http://evil.example"}), "identity")
	})
}

// fiveUpstreams starts a recorder for each of the gateway's services and a
// gateway in front of them (all but those in unset).
func fiveUpstreams(t *testing.T, rateLimit int, unset ...string) (*harness, map[string]*recorder, *gateway.Gateway) {
	t.Helper()
	h := newHarness(t, setup{})
	recs := map[string]*recorder{"identity": h.identity, "box": h.box}
	opts := gateway.Options{
		IdentityURL: mustURL(t, h.keys.URL),
		BoxURL:      mustURL(t, h.boxURL),
		Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:        h.cache,
		Limiter:     ratelimit.NewLocal(rateLimit),
		Documents:   apidocs.Public(),
	}
	skip := map[string]bool{}
	for _, s := range unset {
		skip[s] = true
	}
	for name, dst := range map[string]**url.URL{"courier": &opts.CourierURL, "keyholder": &opts.KeyholderURL, "parlor": &opts.ParlorURL} {
		rec := &recorder{name: name}
		recs[name] = rec
		if skip[name] {
			continue
		}
		srv := httptest.NewServer(rec)
		t.Cleanup(srv.Close)
		*dst = mustURL(t, srv.URL)
	}
	return h, recs, gateway.New(opts)
}

func serve(g http.Handler, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "192.0.2.50:1"
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	return w
}

// TestRoutesOfSection7: operations.md section 7's upstreams and routes.
func TestRoutesOfSection7(t *testing.T) {
	h, recs, g := fiveUpstreams(t, 10000)
	tok := h.token(t)
	tests := []struct {
		method, path string
		public       bool
		upstream     string
	}{
		{"POST", "/v1/email/verify", true, "identity"},
		{"POST", "/v1/email/change/confirm", true, "identity"},
		{"POST", "/v1/email/change", false, "identity"},
		{"POST", "/v1/password/reset", true, "identity"},
		{"POST", "/v1/password/reset/confirm", true, "identity"},
		{"POST", "/v1/session/mfa", true, "identity"},
		{"GET", "/v1/me/sessions", false, "identity"},
		{"POST", "/v1/me/mfa/totp", false, "identity"},
		{"GET", "/v1/accounts/a1/api_keys", false, "identity"},
		{"DELETE", "/v1/accounts/a1/api_keys/k1", false, "identity"},
		{"POST", "/v1/accounts/a1/oidc_clients", false, "identity"},
		{"GET", "/.well-known/openid-configuration", true, "identity"},
		{"POST", "/oauth2/token", true, "identity"},
		{"GET", "/oauth2/userinfo", true, "identity"},
		{"GET", "/oauth2/authorize/callback", true, "identity"},
		{"POST", "/oauth2/requests/r1/allow", true, "identity"},
		{"GET", "/v1/me/preferences", false, "courier"},
		{"PATCH", "/v1/me/preferences", false, "courier"},
		{"POST", "/v1/me/push_subscriptions", false, "courier"},
		{"GET", "/v1/me/push_subscriptions", false, "courier"},
		{"DELETE", "/v1/me/push_subscriptions/s1", false, "courier"},
		{"GET", "/v1/push/vapid_public_key", true, "courier"},
		{"GET", "/v1/accounts/a1/webhook_endpoints", false, "courier"},
		{"DELETE", "/v1/accounts/a1/webhook_endpoints/e1", false, "courier"},
		{"POST", "/v1/exchange", true, "keyholder"},
		{"DELETE", "/v1/credentials/c1", true, "keyholder"},
		{"GET", "/v1/accounts/a1/pulls", false, "keyholder"},
		{"GET", "/v1/accounts/a1/downloads/platform/1.2.0", false, "keyholder"},
		{"GET", "/v1/accounts/a1/downloads/platform/1.2.0/files/a.tar.gz", false, "keyholder"},
		{"GET", "/v2/", true, "keyholder"},
		{"GET", "/v2/acme/app/blobs/sha256:abc", true, "keyholder"},
		{"GET", "/", true, "parlor"},
		{"GET", "/accounts/a1/settings", true, "parlor"},
		{"GET", "/static/app.css", true, "parlor"},
		// The OpenID Provider's sign-in and consent pages are parlor's.
		{"GET", "/oauth/sign-in", true, "parlor"},
		{"POST", "/oauth/consent", true, "parlor"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			if !tt.public {
				if w := serve(g, tt.method, tt.path, ""); w.Code != http.StatusUnauthorized {
					t.Fatalf("without a token = %d, want 401", w.Code)
				}
			} else {
				wantUpstream(t, serve(g, tt.method, tt.path, ""), tt.upstream)
			}
			wantUpstream(t, serve(g, tt.method, tt.path, tok), tt.upstream)
			if got := recs[tt.upstream].last(t).URL.Path; got != tt.path {
				t.Errorf("upstream path = %q, want %q", got, tt.path)
			}
		})
	}

	t.Run("ErrServiceToServiceOnly", func(t *testing.T) {
		before := recs["courier"].count() + recs["identity"].count() + recs["parlor"].count()
		for _, p := range []string{"/v1/emails", "/v1/emails/e1", "/v1/suppressions", "/v1/suppressions/x"} {
			wantProblem(t, serve(g, "GET", p, tok), http.StatusNotFound, "not_found")
			wantProblem(t, serve(g, "POST", p, tok), http.StatusNotFound, "not_found")
		}
		if after := recs["courier"].count() + recs["identity"].count() + recs["parlor"].count(); after != before {
			t.Error("a service-to-service route reached an upstream")
		}
	})
}

// TestWrongMethodIs405AsAtTheService: a method a documented path lacks
// is 405 with Allow in the service's envelope, as the service answers it,
// not the protected subtree's 401 "needs a bearer token"; a documented
// method without credentials is still 401, and an undocumented path
// still asks for them.
func TestWrongMethodIs405AsAtTheService(t *testing.T) {
	_, recs, g := fiveUpstreams(t, 10000)
	tests := []struct {
		method, path, allow string
		box                 bool
	}{
		{"GET", "/v1/password/reset", "POST", false},
		{"PUT", "/v1/password/reset/confirm", "POST", false},
		{"GET", "/v1/email/verify", "POST", false},
		{"GET", "/v1/session/mfa", "POST", false},
		{"GET", "/v1/session", "DELETE, POST", false},
		{"PATCH", "/v1/users", "POST", false},
		{"GET", "/v1/capabilities/redeem", "POST", true},
	}
	before := recs["identity"].count() + recs["box"].count()
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			w := serve(g, tt.method, tt.path, "")
			if tt.box {
				wantBoxError(t, w, http.StatusMethodNotAllowed, "method_not_allowed")
			} else {
				wantProblem(t, w, http.StatusMethodNotAllowed, "method_not_allowed")
			}
			if got := w.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
	if after := recs["identity"].count() + recs["box"].count(); after != before {
		t.Error("a refused method reached an upstream")
	}
	for _, rq := range []struct{ method, path string }{{"DELETE", "/v1/session"}, {"GET", "/v1/me"}, {"GET", "/v1/password/other"}} {
		if w := serve(g, rq.method, rq.path, ""); w.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token = %d, want 401", rq.method, rq.path, w.Code)
		}
	}
}

// TestUnsetUpstreamIs404: a route whose upstream is unset is 404 in its
// envelope, and parlor's absence leaves unknown paths 404.
func TestUnsetUpstreamIs404(t *testing.T) {
	h, _, g := fiveUpstreams(t, 10000, "courier", "keyholder", "parlor")
	tok := h.token(t)
	wantProblem(t, serve(g, "GET", "/v1/me/preferences", tok), http.StatusNotFound, "not_found")
	wantBoxError(t, serve(g, "POST", "/v1/exchange", ""), http.StatusNotFound, "not_found")
	wantProblem(t, serve(g, "GET", "/admin", ""), http.StatusNotFound, "not_found")
	w := serve(g, "GET", "/v2/", "")
	wantOCIError(t, w, http.StatusNotFound, "NAME_UNKNOWN")
}

// TestRegistryAnswersInOCIEnvelope: /v2 speaks the OCI Distribution API, so
// the edge's own refusals there do too.
func TestRegistryAnswersInOCIEnvelope(t *testing.T) {
	_, _, g := fiveUpstreams(t, 1)
	wantUpstream(t, serve(g, "GET", "/v2/", ""), "keyholder")
	wantOCIError(t, serve(g, "GET", "/v2/", ""), http.StatusTooManyRequests, "TOOMANYREQUESTS")
}

func wantOCIError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d (body %s)", w.Code, status, w.Body.String())
	}
	var body struct {
		Errors []struct{ Code, Message string } `json:"errors"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 || body.Errors[0].Code != code {
		t.Fatalf("body %s, want one OCI error %s (%v)", w.Body.String(), code, err)
	}
}

// TestRegistryBlobsStream: a blob reaches the client as the registry sends
// it, not when it has finished.
func TestRegistryBlobsStream(t *testing.T) {
	h := newHarness(t, setup{})
	release := make(chan struct{})
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first chunk;")
		http.NewResponseController(w).Flush()
		<-release
		_, _ = io.WriteString(w, "rest")
	}))
	t.Cleanup(reg.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	g := gateway.New(gateway.Options{
		IdentityURL:  mustURL(t, h.keys.URL),
		KeyholderURL: mustURL(t, reg.URL),
		Verifier:     tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:         h.cache,
		Limiter:      ratelimit.NewLocal(100),
	})
	front := httptest.NewServer(g)
	t.Cleanup(front.Close)
	resp, err := http.Get(front.URL + "/v2/acme/app/blobs/sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("first chunk;"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first chunk;" {
		t.Fatalf("first read = %q, %v; want the first chunk before the blob ends", buf, err)
	}
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "rest" {
		t.Fatalf("rest = %q", rest)
	}
}

// TestReadiness: readiness asks each dependency as it is now and only an
// unavailable key set makes it 503 (operations.md section 8).
func TestReadiness(t *testing.T) {
	h := newHarness(t, setup{})
	identityUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(identityUp.Close)
	boxDown := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"unavailable"}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(boxDown.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	_, _, all := fiveUpstreams(t, 10000)

	ready := func(g http.Handler) (int, string, map[string]string) {
		t.Helper()
		w := serve(g, "GET", "/readyz", "")
		var body struct {
			Status string            `json:"status"`
			Deps   map[string]string `json:"deps"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("/readyz body %q: %v", w.Body.String(), err)
		}
		return w.Code, body.Status, body.Deps
	}

	t.Run("OKNamesEveryUpstream", func(t *testing.T) {
		code, status, deps := ready(all)
		if code != http.StatusOK || status != "ok" {
			t.Fatalf("/readyz = %d %s %v, want 200 ok", code, status, deps)
		}
		for _, name := range []string{"identity", "box", "courier", "keyholder", "parlor", "key_set"} {
			if deps[name] != "ok" {
				t.Errorf("deps[%s] = %q, want ok", name, deps[name])
			}
		}
	})
	t.Run("DegradedWhenAnUpstreamIsDown", func(t *testing.T) {
		g := gateway.New(gateway.Options{
			IdentityURL: mustURL(t, identityUp.URL),
			BoxURL:      mustURL(t, boxDown.URL),
			CourierURL:  mustURL(t, closedURL),
			Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
			Keys:        h.cache,
			Limiter:     ratelimit.NewLocal(100),
		})
		code, status, deps := ready(g)
		if code != http.StatusOK || status != "degraded" || deps["box"] != "unavailable" ||
			deps["courier"] != "unavailable" || deps["identity"] != "ok" || deps["key_set"] != "ok" {
			t.Fatalf("/readyz = %d %s %v, want 200 degraded naming box and courier", code, status, deps)
		}
		if _, ok := deps["parlor"]; ok {
			t.Error("/readyz names parlor, which is not configured")
		}
	})
	t.Run("IdentityStoppedIsUnavailableAtOnce", func(t *testing.T) {
		stopped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		g := gateway.New(gateway.Options{
			IdentityURL: mustURL(t, stopped.URL),
			Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
			Keys:        h.cache,
			Limiter:     ratelimit.NewLocal(100),
		})
		if _, _, deps := ready(g); deps["identity"] != "ok" {
			t.Fatalf("identity = %q before it stopped, want ok", deps["identity"])
		}
		stopped.Close()
		// The key cache still holds a usable set; identity is reported as
		// it is now all the same.
		if _, _, deps := ready(g); deps["identity"] != "unavailable" {
			t.Fatalf("identity = %q after it stopped, want unavailable", deps["identity"])
		}
	})
	t.Run("KeySetUnreachableNowIs503", func(t *testing.T) {
		if !h.cache.Status(time.Now()).Usable {
			t.Fatal("the key cache should hold a usable set for this test")
		}
		h.keys.SetMode(tokenstest.Fail)
		t.Cleanup(func() { h.keys.SetMode(tokenstest.Serve) })
		code, status, deps := ready(h.gw)
		if code != http.StatusServiceUnavailable || status != "unavailable" || deps["key_set"] != "unavailable" {
			t.Fatalf("/readyz = %d %s %v, want 503 with the key set unavailable", code, status, deps)
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		hang := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(hang) })
		g := gateway.New(gateway.Options{
			IdentityURL: mustURL(t, identityUp.URL),
			ParlorURL:   mustURL(t, slow.URL),
			Verifier:    tokens.NewVerifier(h.cache, h.keys.Issuer),
			Keys:        h.cache,
			Limiter:     ratelimit.NewLocal(100),
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, "GET", "/readyz", nil)
		start := time.Now()
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("/readyz took %v with a hanging upstream, want it bounded near 2 s", d)
		}
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"parlor":"unavailable"`) {
			t.Fatalf("/readyz = %d %s, want 200 with parlor unavailable", w.Code, w.Body.String())
		}
	})
}

// TestHeadersTooLargeInEnvelope: an oversized header is 431 in the route's
// envelope.
func TestHeadersTooLargeInEnvelope(t *testing.T) {
	h := newHarness(t, setup{})
	big := map[string]string{"X-Big": strings.Repeat("a", gateway.MaxHeaderBytes)}
	w := h.do(t, "GET", "/v1/operator/releases", h.token(t), big)
	wantBoxError(t, w, http.StatusRequestHeaderFieldsTooLarge, "headers_too_large")
	w = h.do(t, "GET", "/v1/me", h.token(t), big)
	wantProblem(t, w, http.StatusRequestHeaderFieldsTooLarge, "headers_too_large")
	if h.box.count() != 0 {
		t.Error("an oversized request reached box")
	}
	// Just under the limit passes.
	ok := map[string]string{"X-Big": strings.Repeat("a", gateway.MaxHeaderBytes-2048)}
	wantUpstream(t, h.do(t, "GET", "/v1/operator/releases", h.token(t), ok), "box")
}
