package gateway

import (
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

// The services behind the gateway.
const (
	Identity  = "identity"
	Box       = "box"
	Courier   = "courier"
	Keyholder = "keyholder"
	Pantry    = "pantry"
	Parlor    = "parlor"
	Billing   = "billing"
	Darkroom  = "darkroom"
	Muse      = "muse"
)

// Route is one entry of the routing table: requests matching Pattern (a
// ServeMux pattern) go to Service, with or without a verified caller.
type Route struct {
	Pattern string
	Service string
	Public  bool
	env     envelope
}

// envelopeOf is each service's error contract. Keyholder's /v1 answers
// in box's envelope (it passes box's refusals on with box's codes); its
// /v2 routes say their own.
var envelopeOf = map[string]envelope{
	Identity:  problemEnvelope,
	Box:       boxEnvelope,
	Courier:   problemEnvelope,
	Keyholder: boxEnvelope,
	Pantry:    problemEnvelope,
	Parlor:    problemEnvelope,
	Billing:   problemEnvelope,
	Darkroom:  problemEnvelope,
	Muse:      problemEnvelope,
}

func newRoute(pattern, service string, public bool) Route {
	return Route{Pattern: pattern, Service: service, Public: public, env: envelopeOf[service]}
}

// subtree routes prefix as itself and as the root of a subtree.
func subtree(prefix, service string) []Route {
	return []Route{newRoute(prefix, service, false), newRoute(prefix+"/", service, false)}
}

// Routes is the gateway's routing table (operations.md sections 5 and 7).
// A route is protected (a verified token, identity's session cookie, a
// gateway browser session, or a plat_ API key) unless Public.
func Routes() []Route {
	var t []Route
	add := func(rs ...Route) { t = append(t, rs...) }

	// identity: everything under /v1 that no other service claims.
	add(newRoute("/v1/", Identity, false),
		newRoute("POST /v1/users", Identity, true),
		newRoute("POST /v1/session", Identity, true),
		newRoute("POST /v1/session/mfa", Identity, true),
		newRoute("POST /v1/email/verify", Identity, true),
		newRoute("POST /v1/invitations/preview", Identity, true),
		newRoute("POST /v1/email/change/confirm", Identity, true),
		newRoute("POST /v1/password/reset", Identity, true),
		newRoute("POST /v1/password/reset/confirm", Identity, true),
		newRoute("GET /.well-known/jwks.json", Identity, true),
		// The OpenID Provider checks its own clients and tokens.
		newRoute("/.well-known/openid-configuration", Identity, true),
		newRoute("/oauth2/", Identity, true))
	add(subtree("/v1/email", Identity)...)
	add(subtree("/v1/password", Identity)...)
	add(subtree("/v1/me", Identity)...)
	add(subtree("/v1/accounts/{id}/api_keys", Identity)...)
	add(subtree("/v1/accounts/{id}/oidc_clients", Identity)...)

	// box
	for _, p := range []string{
		"/v1/operator/entitlements",
		"/v1/operator/releases",
		"/v1/operator/audit-events",
		"/v1/accounts/{id}/entitlements",
		"/v1/accounts/{id}/artifact_fetches",
		"/v1/accounts/{id}/audit-events",
		"/v1/accounts/{id}/releases",
		"/v1/accounts/{id}/approvals",
		"/v1/accounts/{id}/claims",
		// licensing.md §5: holdings, installations and their licences.
		"/v1/accounts/{id}/holdings",
		"/v1/accounts/{id}/installations",
		"/v1/operator/installations",
	} {
		add(subtree(p, Box)...)
	}
	// Only the subtree: /v1/installations itself names nothing.
	add(newRoute("/v1/installations/", Box, false))
	add(newRoute("/v1/capabilities/", Box, false), newRoute("POST /v1/capabilities/redeem", Box, true))
	// The licence keys are public: anyone may verify a licence file.
	add(newRoute("GET /v1/license/keys", Box, true))

	// courier: /v1/emails and /v1/suppressions are service-to-service
	// only and never routed (see routes).
	add(subtree("/v1/me/preferences", Courier)...)
	add(subtree("/v1/me/push_subscriptions", Courier)...)
	add(newRoute("GET /v1/push/vapid_public_key", Courier, true))
	add(subtree("/v1/accounts/{id}/webhook_endpoints", Courier)...)

	// keyholder: /v2 checks its own Basic credential, and streams blobs.
	add(newRoute("/v1/exchange", Keyholder, true))
	// A customer ends a credential early with that credential's own Basic
	// auth (keyholder.md §2), which keyholder checks, as on /v2: the edge
	// asks no bearer for it.
	add(newRoute("DELETE /v1/credentials/{username}", Keyholder, true))
	add(subtree("/v1/accounts/{id}/pulls", Keyholder)...)
	// A release's files, downloaded in a browser (licensing.md §4).
	// Only the subtree: the root names nothing.
	add(newRoute("/v1/accounts/{id}/downloads/", Keyholder, false))
	// The operator console's read of any account's pulls; the rest of
	// /v1/operator/accounts is identity's.
	add(subtree("/v1/operator/accounts/{id}/pulls", Keyholder)...)
	v2 := newRoute("/v2/", Keyholder, true)
	v2.env = ociEnvelope
	add(v2)

	// pantry (pantry.md section 3): reads are public, still limited per
	// address; writes and stars need a caller.
	add(newRoute("/v1/projects/", Pantry, false),
		newRoute("GET /v1/projects", Pantry, true),
		newRoute("GET /v1/projects/{slug}", Pantry, true),
		newRoute("GET /v1/tags", Pantry, true))
	add(subtree("/v1/accounts/{id}/projects", Pantry)...)
	add(subtree("/v1/me/stars", Pantry)...)
	// billing (billing.md §7): the storefront's plans and the processor's
	// webhook are public (billing checks the webhook's signature on the
	// body, which passes byte for byte); /v1/usage is never routed.
	add(newRoute("GET /v1/plans", Billing, true), newRoute("POST /v1/webhooks/stripe", Billing, true))
	for _, p := range []string{
		"/v1/accounts/{id}/checkout",
		"/v1/accounts/{id}/billing",
		"/v1/accounts/{id}/usage",
		"/v1/operator/plans",
		"/v1/operator/payments",
		"/v1/operator/reconciliations",
	} {
		add(subtree(p, Billing)...)
	}

	// darkroom (darkroom.md section 4): uploads need a caller; reads of
	// media need no bearer at the edge (darkroom decides: public media,
	// the owner's token, or a signed link).
	add(subtree("/v1/uploads", Darkroom)...)
	add(subtree("/v1/media", Darkroom)...)
	add(newRoute("GET /v1/media/{id}", Darkroom, true), newRoute("GET /v1/media/{id}/{preset}", Darkroom, true))
	// muse (muse.md section 5): the OpenAI-compatible routes, each
	// needing a caller (a token with OpenAI-Organization, or a plat_ key),
	// and the account's vault, aliases, budget and usage. Streams pass
	// unbuffered.
	add(newRoute("POST /v1/chat/completions", Muse, false), newRoute("GET /v1/models", Muse, false))
	for _, p := range []string{
		"/v1/accounts/{id}/provider_credentials",
		"/v1/accounts/{id}/models",
		"/v1/accounts/{id}/budget",
		"/v1/accounts/{id}/usage/models",
		"/v1/operator/provider_credentials",
	} {
		add(subtree(p, Muse)...)
	}

	// parlor: every other path; it decides which pages need a session.
	add(newRoute("/", Parlor, true))
	return t
}

// internalOnly are paths that exist on a service but never at the edge.
var internalOnly = []string{"/v1/emails", "/v1/emails/", "/v1/suppressions", "/v1/suppressions/", "/v1/usage", "/v1/usage/"}

// routes is the gateway's whole surface. Every route but the probes is
// rate limited.
func (g *Gateway) routes() *http.ServeMux {
	mux := http.NewServeMux()

	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(g.readiness))
	mux.Handle("GET /openapi.json", g.limitedByAddress(g.serveOpenAPI))
	mux.Handle("/healthz", g.methodNotAllowed("GET, HEAD"))
	mux.Handle("/readyz", g.methodNotAllowed("GET, HEAD"))
	mux.Handle("/openapi.json", g.methodNotAllowed("GET, HEAD"))

	// /auth/* exists only with both IDENTITY_URL and REDIS_URL; otherwise
	// it falls through to parlor, or the 404 of an unset upstream.
	if g.sessions != nil {
		mux.Handle("POST /auth/login", g.limitedByAddress(g.login))
		mux.Handle("POST /auth/logout", g.limitedByAddress(g.logout))
		mux.Handle("GET /auth/session", g.limitedByAddress(g.session))
		mux.Handle("/auth/login", g.methodNotAllowed("POST"))
		mux.Handle("/auth/logout", g.methodNotAllowed("POST"))
		mux.Handle("/auth/session", g.methodNotAllowed("GET, HEAD"))
	}

	for _, rt := range Routes() {
		mux.Handle(rt.Pattern, g.proxied(rt))
	}
	for _, p := range internalOnly {
		mux.Handle(p, g.limitedByAddress(func(w http.ResponseWriter, r *http.Request) {
			writeErrorIn(w, r, g.log, problemEnvelope, errs.New(CodeNotFound, "no route for "+r.URL.Path))
		}))
	}
	return mux
}

func (g *Gateway) methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, r, g.log, errs.New(CodeMethodNotAllowed, r.Method+" is not allowed here; use "+allow))
	})
}
