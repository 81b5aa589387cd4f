package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

// recorder is an upstream that remembers the requests it received.
type recorder struct {
	name string
	mu   sync.Mutex
	reqs []*http.Request
}

func (u *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.reqs = append(u.reqs, r.Clone(context.Background()))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"upstream": u.name, "path": r.URL.Path})
}

func (u *recorder) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatalf("upstream %s received nothing", u.name)
	}
	return u.reqs[len(u.reqs)-1]
}

func (u *recorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

type harness struct {
	keys     *tokenstest.KeyServer
	identity *recorder
	box      *recorder
	boxURL   string
	cache    *tokens.Cache
	gw       *gateway.Gateway
	opts     gateway.Options // what gw was made with
	limiter  ratelimit.Limiter
}

type setup struct {
	ttl        time.Duration
	keyMode    tokenstest.Mode
	rateLimit  int
	limiter    ratelimit.Limiter
	trusted    int
	trustedNet []netip.Prefix
	noBox      bool
	sessions   *session.Store
	redisPing  func(context.Context) error
	identityMx func(mux *http.ServeMux)
	origins    []string
	darkroom   string
}

// newHarness starts a key server that also serves identity's routes, a box
// upstream, a key cache, and a gateway in front of them.
func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	h := &harness{identity: &recorder{name: "identity"}, box: &recorder{name: "box"}}
	mux := http.NewServeMux()
	if s.identityMx != nil {
		s.identityMx(mux)
	}
	mux.Handle("/", h.identity)
	h.keys = tokenstest.NewKeyServer(t, mux)
	h.keys.SetMode(s.keyMode)
	boxSrv := httptest.NewServer(h.box)
	t.Cleanup(boxSrv.Close)
	h.boxURL = boxSrv.URL

	if s.ttl == 0 {
		s.ttl = time.Minute
	}
	h.cache = tokens.New(tokens.Options{URL: h.keys.JWKSURL(), TTL: s.ttl, Cooldown: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.cache.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if s.keyMode == tokenstest.Serve {
		testutil.Eventually(t, 10*time.Second, "the key set", func() bool { return h.cache.Status(time.Now()).Usable })
	}

	if s.rateLimit == 0 {
		s.rateLimit = 10000
	}
	h.limiter = s.limiter
	if h.limiter == nil {
		h.limiter = ratelimit.NewLocal(s.rateLimit)
	}
	opts := gateway.Options{
		Documents:      apidocs.Public(),
		IdentityURL:    mustURL(t, h.keys.URL),
		Verifier:       tokens.NewVerifier(h.cache, h.keys.Issuer),
		Keys:           h.cache,
		Limiter:        h.limiter,
		Sessions:       s.sessions,
		RedisPing:      s.redisPing,
		TrustedProxies: s.trusted,
		TrustedNets:    s.trustedNet,
		AllowedOrigins: s.origins,
	}
	if !s.noBox {
		opts.BoxURL = mustURL(t, boxSrv.URL)
	}
	if s.darkroom != "" {
		opts.DarkroomURL = mustURL(t, s.darkroom)
	}
	h.gw, h.opts = gateway.New(opts), opts
	return h
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// do sends one request through the gateway from remote (host:port).
func (h *harness) do(t *testing.T, method, path, token string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		body = strings.NewReader(`{}`)
	}
	r := httptest.NewRequest(method, path, body)
	r.RemoteAddr = "192.0.2.10:40000"
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "RemoteAddr" {
			r.RemoteAddr = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.gw.ServeHTTP(w, r)
	return w
}

// sessionToken is a token of user's session sid.
func (h *harness) sessionToken(t *testing.T, user, sid string) string {
	t.Helper()
	c := h.keys.Claims(user, 15*time.Minute)
	c["sid"] = sid
	return h.keys.Token(t, "k1", c)
}

func (h *harness) token(t *testing.T) string {
	return h.keys.Token(t, "k1", h.keys.Claims("0b7c1f7e-6a55-4d3b-9f0e-3d7b1c2a9e10", 15*time.Minute))
}

type problem struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	TraceID string `json:"trace_id"`
}

func wantProblem(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d (body %s)", w.Code, status, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if p.Code != code || p.Status != status || p.TraceID == "" {
		t.Fatalf("problem = %+v, want code %q status %d with a trace id", p, code, status)
	}
}

func wantUpstream(t *testing.T, w *httptest.ResponseRecorder, name string) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 from %s (body %s)", w.Code, name, w.Body.String())
	}
	var got struct{ Upstream string }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Upstream != name {
		t.Fatalf("answered by %q (%v), want %s", got.Upstream, err, name)
	}
}

// wantBoxError checks an answer in box's envelope.
func wantBoxError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d (body %s)", w.Code, status, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error == nil {
		t.Fatalf("body %s is not box's envelope (%v)", w.Body.String(), err)
	}
	if body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error = %+v, want code %q with a message", *body.Error, code)
	}
}

// wantRefusal checks the edge's own answer in the envelope of service:
// box's, or identity's problem+json.
func wantRefusal(t *testing.T, w *httptest.ResponseRecorder, service string, status int) {
	t.Helper()
	codes := map[int][2]string{
		http.StatusUnauthorized:       {"unauthorized", "unauthenticated"},
		http.StatusTooManyRequests:    {"rate_limited", "rate_limited"},
		http.StatusServiceUnavailable: {"unavailable", "unavailable"},
		http.StatusNotFound:           {"not_found", "not_found"},
	}
	if service == "box" {
		wantBoxError(t, w, status, codes[status][1])
		return
	}
	wantProblem(t, w, status, codes[status][0])
}
