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

// sameOrigin refuses a cookie-authenticated state change sent from another
// origin (SameSite=Lax already keeps the cookie off most of them).
func sameOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

var errCrossOrigin = errs.New(identity.CodeForbidden, "cross-origin request refused")

// authenticated runs h for a caller with a valid token and a live session.
func (a *api) authenticated(h principalHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, fromCookie := token(r)
		if fromCookie && !sameOrigin(r) {
			a.fail(w, r, errCrossOrigin)
			return
		}
		p, err := a.svc.Authenticate(r.Context(), tok, "")
		if err != nil {
			a.fail(w, r, err)
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
		if fromCookie && !sameOrigin(r) {
			a.fail(w, r, errCrossOrigin)
			return
		}
		p, err := a.svc.Authenticate(r.Context(), tok, r.PathValue("accountID"))
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if err := identity.Authorize(p, min); err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, p)
	})
}
