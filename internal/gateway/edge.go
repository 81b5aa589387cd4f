package gateway

import (
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
)

type access bool

const (
	public    access = false
	protected access = true
)

// caller is who a request comes from, as far as the gateway could tell.
type caller struct {
	subject   string // set when a token verified
	viaCookie bool   // authenticated by the gateway's session cookie
	token     string // the identity token behind the cookie
}

var (
	errTokenRequired = errs.New(CodeTokenRequired, "this route needs a bearer token")
	errNoSession     = errs.New(CodeNotAuthenticated, "no signed-in browser session")
	errSessionsDown  = errs.New(CodeSessionStoreUnavailable, "browser sessions are unavailable; try again shortly")
	errOrigin        = errs.New(CodeOriginRefused, "a cookie-authenticated change must come from an allowed Origin")
)

// proxied forwards a route to up. A protected route first authenticates the
// caller; the caller is then rate limited (by subject when verified, by
// address otherwise, so failed attempts count too); only then is the
// authentication outcome answered or the request forwarded.
func (g *Gateway) proxied(up *upstream, acc access) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := clientIP(r, g.opts.TrustedProxies)
		var (
			who     caller
			authErr error
		)
		if acc == protected && up != nil {
			who, authErr = g.authenticate(r)
		}
		key := "ip:" + ip
		if who.subject != "" {
			key = "user:" + who.subject
		}
		if !g.admit(w, r, key) {
			return
		}
		if up == nil {
			writeError(w, r, g.log, errs.New(CodeUpstreamNotConfigured, "this gateway has no upstream for "+r.URL.Path))
			return
		}
		if authErr != nil {
			if errors.Is(authErr, errNoSession) {
				clearSessionCookie(w)
			}
			writeError(w, r, g.log, authErr)
			return
		}
		if who.viaCookie && unsafeMethod(r.Method) && !g.originAllowed(r) {
			writeError(w, r, g.log, errOrigin)
			return
		}
		g.serveProxy(w, r, up, forward{clientIP: ip, proto: requestProto(r, g.opts.TrustedProxies), bearer: who.token})
	})
}

// authenticate verifies the request's bearer token or, when there is none
// and browser sessions are on, its session cookie. A request with an
// Authorization header is judged on that header alone.
func (g *Gateway) authenticate(r *http.Request) (caller, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			return caller{}, errInvalidToken
		}
		claims, err := g.verifier.Verify(r.Context(), strings.TrimSpace(token))
		if err != nil {
			return caller{}, err
		}
		return caller{subject: claims.Subject}, nil
	}
	if g.sessions != nil {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			sess, err := g.sessions.Get(r.Context(), c.Value)
			if errors.Is(err, session.ErrNotFound) {
				return caller{}, errNoSession
			}
			if err != nil {
				g.log.Warn("session store read failed", "error", err.Error())
				return caller{}, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter}
			}
			claims, err := g.verifier.Verify(r.Context(), sess.Token)
			if err != nil {
				if errors.Is(err, errInvalidToken) {
					return caller{}, errNoSession
				}
				return caller{}, err
			}
			return caller{subject: claims.Subject, viaCookie: true, token: sess.Token}, nil
		}
	}
	return caller{}, errTokenRequired
}

// limitedByAddress rate limits a gateway-served route by the caller's
// address.
func (g *Gateway) limitedByAddress(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.admit(w, r, "ip:"+clientIP(r, g.opts.TrustedProxies)) {
			h(w, r)
		}
	})
}

// admit takes one request from key's allowance, sets the RateLimit headers
// and, over the limit, answers 429 with Retry-After.
func (g *Gateway) admit(w http.ResponseWriter, r *http.Request, key string) bool {
	d := g.limiter.Allow(r.Context(), key)
	g.setRateHeaders(w.Header(), d)
	if d.Allowed {
		return true
	}
	writeError(w, r, g.log, &retryError{
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
