package gateway

import (
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
)

// boxRoutes are the path prefixes box serves (operations.md section 5);
// each is routed as itself and as the root of a subtree.
var boxRoutes = []string{
	"/v1/operator/entitlements",
	"/v1/operator/releases",
	"/v1/accounts/{id}/entitlements",
	"/v1/accounts/{id}/artifact_fetches",
	"/v1/accounts/{id}/audit-events",
	"/v1/accounts/{id}/releases",
	"/v1/accounts/{id}/approvals",
	"/v1/accounts/{id}/claims",
}

// routes is the gateway's whole surface. Every route but the probes is
// rate limited; every proxied route but the public ones needs a verified
// token or browser session.
func (g *Gateway) routes() *http.ServeMux {
	mux := http.NewServeMux()

	mux.Handle("GET /healthz", httpx.Healthz())
	mux.Handle("GET /readyz", httpx.Readyz(g.readiness))
	mux.Handle("/healthz", g.methodNotAllowed("GET, HEAD"))
	mux.Handle("/readyz", g.methodNotAllowed("GET, HEAD"))

	// /auth/* exists only with both IDENTITY_URL and REDIS_URL; otherwise
	// it falls through to the 404 below.
	if g.sessions != nil {
		mux.Handle("POST /auth/login", g.limitedByAddress(g.login))
		mux.Handle("POST /auth/logout", g.limitedByAddress(g.logout))
		mux.Handle("GET /auth/session", g.limitedByAddress(g.session))
		mux.Handle("/auth/login", g.methodNotAllowed("POST"))
		mux.Handle("/auth/logout", g.methodNotAllowed("POST"))
		mux.Handle("/auth/session", g.methodNotAllowed("GET, HEAD"))
	}

	for _, p := range boxRoutes {
		mux.Handle(p, g.proxied(g.box, protected))
		mux.Handle(p+"/", g.proxied(g.box, protected))
	}
	mux.Handle("/v1/capabilities/", g.proxied(g.box, protected))
	mux.Handle("POST /v1/capabilities/redeem", g.proxied(g.box, public))

	mux.Handle("POST /v1/users", g.proxied(g.identity, public))
	mux.Handle("POST /v1/session", g.proxied(g.identity, public))
	mux.Handle("GET /.well-known/jwks.json", g.proxied(g.identity, public))
	mux.Handle("/v1/", g.proxied(g.identity, protected))

	mux.Handle("/", g.limitedByAddress(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, g.log, errs.New(CodeNotFound, "no route for "+r.URL.Path))
	}))
	return mux
}

func (g *Gateway) methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, r, g.log, errs.New(CodeMethodNotAllowed, r.Method+" is not allowed here; use "+allow))
	})
}
