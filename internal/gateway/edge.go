package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/tokens"
)

// caller is who a request comes from, as far as the gateway could tell.
type caller struct {
	// limitKey is the caller's own rate-limit allowance: a verified
	// token's session, or an API key; empty for an anonymous caller.
	limitKey  string
	viaCookie bool   // authenticated by a cookie, not an Authorization header
	token     string // the identity token to forward in place of the cookie
}

// apiKeyPrefix starts identity's API keys, which are no JWT: the gateway
// passes them to the upstream, which checks them with identity
// (identity-lifecycle.md section 5).
const apiKeyPrefix = "plat_"

// identityCookie is identity's own session cookie, holding its token.
const identityCookie = "__Host-session"

var (
	errTokenRequired = errs.New(CodeTokenRequired, "this route needs a bearer token")
	errNoSession     = errs.New(CodeNotAuthenticated, "no signed-in browser session")
	errInvalidToken  = errs.New(CodeInvalidToken, "the access token is invalid or expired")
	errSessionsDown  = errs.New(CodeSessionStoreUnavailable, "browser sessions are unavailable; try again shortly")
	errOrigin        = errs.New(CodeOriginRefused, "a cookie-authenticated change must come from an allowed origin")
)

// proxied forwards requests of rt to its service. A protected route first
// authenticates the caller; the request is then counted against the
// caller's address and, when it has one, its session or API key; only then
// is the authentication outcome answered or the request forwarded. Every
// answer of the edge's own is in the route's envelope.
func (g *Gateway) proxied(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := g.upstreams[rt.Service]
		ip := clientIP(r, g.trust())
		var (
			who     caller
			authErr error
		)
		if !rt.Public && up != nil {
			who, authErr = g.authenticate(r)
		}
		if !g.admit(w, r, rt.env, "ip:"+ip, who.limitKey) {
			return
		}
		if up == nil {
			g.refuse(w, r, rt, errs.New(CodeUpstreamNotConfigured, "no route for "+r.URL.Path))
			return
		}
		if authErr == errTokenRequired {
			// A method the path lacks is the service's 405, not a
			// request for credentials.
			if allow, ok := g.methods.refused(r); ok {
				w.Header().Set("Allow", allow)
				g.refuse(w, r, rt, errs.New(CodeMethodNotAllowed, r.Method+" is not allowed here; use "+allow))
				return
			}
		}
		if authErr != nil {
			if errors.Is(authErr, errNoSession) {
				clearSessionCookie(w)
			}
			g.refuse(w, r, rt, authErr)
			return
		}
		if who.viaCookie && unsafeMethod(r.Method) && !g.originAllowed(r) {
			g.refuse(w, r, rt, errOrigin)
			return
		}
		g.serveProxy(w, r, up, forward{
			clientIP: ip, proto: requestProto(r, g.trust()), bearer: who.token, env: rt.env,
		})
	})
}

// refuse answers err in rt's envelope; a 401 names the route's service as
// the realm, as the service itself does.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, rt Route, err error) {
	if e, ok := errs.As(err); ok && rt.env != ociEnvelope {
		if a := answers[rt.env][e.Code]; a.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+rt.Service+`"`)
		}
	}
	writeErrorIn(w, r, g.log, rt.env, err)
}

// authenticate verifies the request's bearer token or, when there is none,
// identity's session cookie or the gateway's browser session. A request
// with an Authorization header is judged on that header alone.
func (g *Gateway) authenticate(r *http.Request) (caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return caller{}, errInvalidToken
		}
		if strings.HasPrefix(token, apiKeyPrefix) {
			return caller{limitKey: "key:" + keyDigest(token)}, nil
		}
		claims, err := g.verifier.Verify(r.Context(), token)
		if err != nil {
			return caller{}, err
		}
		return caller{limitKey: sessionKey(claims, token)}, nil
	}
	if c, err := r.Cookie(identityCookie); err == nil && c.Value != "" {
		claims, err := g.verifier.Verify(r.Context(), c.Value)
		if err == nil {
			return caller{limitKey: sessionKey(claims, c.Value), viaCookie: true, token: c.Value}, nil
		}
		// A stale identity cookie does not hide a live gateway session.
		if errs.Code(err) != CodeInvalidToken || !g.hasSessionCookie(r) {
			return caller{}, err
		}
	}
	if g.sessions != nil {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			sess, err := g.sessions.Get(r.Context(), c.Value)
			if errors.Is(err, session.ErrNotFound) {
				return caller{}, errNoSession
			}
			if err != nil {
				g.log.WarnContext(r.Context(), "session store read failed", "err", err.Error())
				return caller{}, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter}
			}
			claims, err := g.verifier.Verify(r.Context(), sess.Token)
			if err != nil {
				if errs.Code(err) == CodeInvalidToken {
					return caller{}, errNoSession
				}
				return caller{}, err
			}
			return caller{limitKey: sessionKey(claims, sess.Token), viaCookie: true, token: sess.Token}, nil
		}
	}
	return caller{}, errTokenRequired
}

// hasSessionCookie reports whether r carries the gateway's browser
// session cookie and browser sessions are on.
func (g *Gateway) hasSessionCookie(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return g.sessions != nil && err == nil && c.Value != ""
}

// sessionKey is a verified token's own allowance: its session, so that a
// token that leaked (or outlived its logout) exhausts only that session's
// budget and never its user's. A token without a sid stands for itself.
func sessionKey(c tokens.Claims, token string) string {
	if c.SessionID != "" {
		return "sid:" + c.SessionID
	}
	return "tok:" + keyDigest(token)
}

// keyDigest names a credential in the limiter's keys (which Redis holds)
// without the credential itself.
func keyDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}

// limitedByAddress rate limits a gateway-served route by the caller's
// address.
func (g *Gateway) limitedByAddress(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.admit(w, r, edgeEnvelope, "ip:"+clientIP(r, g.trust()), "") {
			h(w, r)
		}
	})
}

// admit takes one request from the address's allowance and, when the
// caller has one, from its own (session or API key); it sets the RateLimit
// headers from the tighter of the two and, over either limit, answers 429
// with Retry-After in env.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, env envelope, addrKey, ownKey string) bool {
	d := g.limiter.Allow(r.Context(), addrKey)
	if ownKey != "" && d.Allowed {
		if o := g.limiter.Allow(r.Context(), ownKey); !o.Allowed || o.Remaining < d.Remaining {
			d = o
		}
	}
	g.setRateHeaders(w.Header(), d)
	if d.Allowed {
		return true
	}
	writeErrorIn(w, r, g.log, env, &retryError{
		err:        errs.New(CodeRateLimited, "too many requests; slow down"),
		retryAfter: d.RetryAfter,
	})
	return false
}

// The RateLimit header names as a Header stores them. They are set on
// every response, and Header.Set would canonicalize each, which for these
// names means a new string every time.
var (
	rateLimitLimit     = textproto.CanonicalMIMEHeaderKey("RateLimit-Limit")
	rateLimitRemaining = textproto.CanonicalMIMEHeaderKey("RateLimit-Remaining")
	rateLimitReset     = textproto.CanonicalMIMEHeaderKey("RateLimit-Reset")
	rateLimitPolicy    = textproto.CanonicalMIMEHeaderKey("RateLimit-Policy")
)

// policyHeaders are the RateLimit values that depend only on the policy,
// rendered once instead of on every response.
type policyHeaders struct {
	limit                   int
	period                  time.Duration
	limitValue, policyValue string
}

func (g *Gateway) setRateHeaders(h http.Header, d ratelimit.Decision) {
	p := g.policy.Load()
	if p == nil || p.limit != d.Limit || p.period != d.Period {
		p = &policyHeaders{
			limit:       d.Limit,
			period:      d.Period,
			limitValue:  strconv.Itoa(d.Limit),
			policyValue: strconv.Itoa(d.Limit) + ";w=" + strconv.Itoa(int(d.Period.Seconds())),
		}
		g.policy.Store(p)
	}
	h[rateLimitLimit] = []string{p.limitValue}
	h[rateLimitRemaining] = []string{strconv.Itoa(d.Remaining)}
	h[rateLimitReset] = []string{retrySeconds(d.ResetAfter)}
	h[rateLimitPolicy] = []string{p.policyValue}
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}
