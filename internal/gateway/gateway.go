// Package gateway is the platform's edge: it routes requests to the
// services (Routes), verifies bearer tokens and identity's session cookie
// against identity's key set, limits each session's and each address's
// request rate, answers its own refusals in the envelope of the service
// behind the route, serves the merged public OpenAPI document, and, when
// Redis is configured, holds browser sessions so a browser never sees an
// identity token.
package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/tokens"
)

// Options are the gateway's dependencies and settings.
type Options struct {
	// IdentityURL, BoxURL, CourierURL, KeyholderURL and ParlorURL are the
	// upstreams; a nil one makes its routes answer 404 in their envelope.
	IdentityURL  *url.URL
	BoxURL       *url.URL
	CourierURL   *url.URL
	KeyholderURL *url.URL
	PantryURL    *url.URL
	MuseURL      *url.URL
	ParlorURL    *url.URL
	BillingURL   *url.URL
	DarkroomURL  *url.URL
	// Verifier checks bearer tokens.
	Verifier *tokens.Verifier
	// Keys is the key-set cache behind Verifier, read by readiness.
	Keys tokens.KeySource
	// Limiter limits each caller; it is required.
	Limiter ratelimit.Limiter
	// Sessions holds browser sessions; nil (no REDIS_URL) leaves /auth/*
	// out. /auth/* also needs IdentityURL.
	Sessions *session.Store
	// RedisPing checks Redis for readiness; nil when Redis is not
	// configured, which leaves it out of /readyz.
	RedisPing func(ctx context.Context) error
	// TrustedProxies is how many proxies in front of the gateway append to
	// X-Forwarded-For (platform.md section 8).
	TrustedProxies int
	// TrustedNets, when set, replace the count: X-Forwarded-For and
	// X-Forwarded-Proto are believed only from a socket peer in them, and
	// the caller is the rightmost address of the chain outside them.
	TrustedNets []netip.Prefix
	// AllowedOrigins are the origins (scheme://host[:port]) allowed to make
	// cookie-authenticated state-changing requests; empty means the
	// gateway's own origin (scheme, host and port). A request the browser
	// marks Sec-Fetch-Site: same-origin is allowed either way.
	AllowedOrigins []string
	// Documents are the OpenAPI documents of the services behind the
	// gateway, by service name (Identity, Box, …), handed in by the
	// binary's wiring (apidocs.Public); /openapi.json is their paths as
	// the edge routes them plus the edge's own answers. A service left out
	// is left out of the merged document.
	Documents map[string][]byte
	// Transport carries proxied requests and identity calls; nil means
	// NewHTTPTransport().
	Transport http.RoundTripper
	// TransferIdle is how long a proxied request's body or answer may
	// stand still before the connection is cut; while bytes move, the
	// server's whole-request read and write timeouts do not apply (a
	// large download, an upload, a long model stream). 0 means
	// DefaultTransferIdle.
	TransferIdle time.Duration
	Logger       *slog.Logger
}

// Gateway is the edge's HTTP handler.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	verifier *tokens.Verifier
	limiter  ratelimit.Limiter
	sessions *session.Store
	// upstreams are the configured services by name.
	upstreams map[string]*upstream
	// openapiHandler serves the merged public document; openapiErr says
	// why there is none.
	openapiHandler http.Handler
	openapiErr     error
	client         *http.Client // for the gateway's own calls to identity
	origins        map[string]bool
	handler        http.Handler
	// methods refuses, on a protected route, a method its path lacks.
	methods methodTable
	policy  atomic.Pointer[policyHeaders] // the limiter's policy, rendered
	ready   *service.Readiness            // the named checks of /readyz
}

// New returns the gateway's handler, with request logging and trace
// context around every route.
func New(opts Options) *Gateway {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Transport == nil {
		opts.Transport = NewHTTPTransport()
	}
	if opts.TransferIdle <= 0 {
		opts.TransferIdle = DefaultTransferIdle
	}
	g := &Gateway{
		opts:     opts,
		log:      opts.Logger,
		verifier: opts.Verifier,
		limiter:  opts.Limiter,
		client:   &http.Client{Transport: opts.Transport, Timeout: identityCallTimeout},
		origins:  make(map[string]bool, len(opts.AllowedOrigins)),
	}
	if opts.IdentityURL != nil && opts.Sessions != nil {
		g.sessions = opts.Sessions
	}
	for _, o := range opts.AllowedOrigins {
		g.origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	g.upstreams = make(map[string]*upstream)
	for name, u := range map[string]*url.URL{
		Identity: opts.IdentityURL, Box: opts.BoxURL, Courier: opts.CourierURL,
		Keyholder: opts.KeyholderURL, Pantry: opts.PantryURL, Parlor: opts.ParlorURL, Billing: opts.BillingURL, Darkroom: opts.DarkroomURL,
		Muse: opts.MuseURL,
	} {
		if u != nil {
			g.upstreams[name] = g.newUpstream(name, u)
		}
	}
	g.ready = g.newReadiness()
	g.loadOpenAPI()
	g.methods = newMethodTable(opts.Documents)
	internal := func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteProblem(w, r, http.StatusInternalServerError, CodeInternal, "internal error", nil)
	}
	mux := g.routes()
	g.handler = httpx.Chain(httpx.RecordRoute(g.limitHeaders(mux)), httpx.Observe(g.log, internal))
	return g
}

// ServeHTTP serves one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// BrowserSessions reports whether /auth/* is served.
func (g *Gateway) BrowserSessions() bool { return g.sessions != nil }
