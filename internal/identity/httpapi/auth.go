package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
)

// SessionCookie carries the token for browsers.
const SessionCookie = "__Host-session"

type principalHandler func(w http.ResponseWriter, r *http.Request, p identity.Principal)

// token reads the bearer header, else the session cookie; fromCookie says
// which, because a cookie-borne request is open to cross-site forgery.
func token(r *http.Request) (tok string, fromCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, value, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(value), false
		}
		return "", false
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value, true
	}
	return "", false
}

// sameOrigin refuses a cookie-authenticated state change unless the
// browser says it comes from this origin (Sec-Fetch-Site: same-origin) or
// its Origin is exactly the public origin, scheme, host and port. A
// missing Origin is refused too: SameSite=Lax keeps the cookie off most
// cross-site requests, not all (a top-level POST from a sibling subdomain,
// an old browser), and every browser that sends the cookie on a state
// change sends one of the two headers.
func (a *api) sameOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	origin, ok := originOf(r.Header.Get("Origin"))
	return ok && a.origin != "" && origin == a.origin
}

// originOf returns s's origin as scheme://host:port, lower-cased with the
// scheme's default port made explicit, so equal origins compare equal;
// ok is false for anything that is not a bare http(s) origin ("null",
// paths, user info).
func originOf(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme == "http" && port == "":
		port = "80"
	case scheme == "https" && port == "":
		port = "443"
	case scheme != "http" && scheme != "https":
		return "", false
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port, true
}

var errCrossOrigin = errs.New(identity.CodeForbidden, "cross-origin request refused")

// authenticated runs h for a caller with a valid token and a live session.
func (a *api) authenticated(h principalHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, fromCookie := token(r)
		if fromCookie && !a.sameOrigin(r) {
			a.fail(w, r, errCrossOrigin)
			return
		}
		p, err := a.svc.Authenticate(r.Context(), tok, "")
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if p.APIKey != nil { // a key acts only on its account's routes
			a.fail(w, r, identity.ErrInsufficientScope)
			return
		}
		h(w, r, p)
	})
}

// member runs h for a member of the account the path names with at least
// min. It is the single place the minimum-role table is enforced, before
// any handler: a non-member (or an unknown or malformed account id) gets
// 404, never 403; a member below min gets 403.
func (a *api) member(min identity.Role, h principalHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, fromCookie := token(r)
		if fromCookie && !a.sameOrigin(r) {
			a.fail(w, r, errCrossOrigin)
			return
		}
		p, err := a.svc.Authenticate(r.Context(), tok, r.PathValue("accountID"))
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if p.APIKey != nil {
			if err := keyAllowed(r, p); err != nil {
				a.fail(w, r, err)
				return
			}
			h(w, r, p)
			return
		}
		if err := identity.Authorize(p, min); err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, p)
	})
}
