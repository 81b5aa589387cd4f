package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/httpx"
)

const (
	// sessionCookie is the browser session's cookie. The __Host- prefix
	// makes browsers refuse it unless it is Secure, has Path=/ and no
	// Domain, so no sibling host can set or overwrite it.
	sessionCookie = "__Host-gw_session"
	// sessionRetryAfter is the Retry-After sent when Redis is unreachable.
	sessionRetryAfter = 2 * time.Second
	// maxIdentityBody caps what the gateway reads of identity's answers.
	maxIdentityBody = 1 << 20
)

type sessionState struct {
	Authenticated bool      `json:"authenticated"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// login signs a browser in: it passes the credentials to identity, keeps the
// token identity issues in the session store, and gives the browser only a
// session cookie. identity's refusals (bad credentials, validation, its own
// rate limit) are relayed as identity wrote them.
func (g *Gateway) login(w http.ResponseWriter, r *http.Request) {
	if !g.originAllowed(r) {
		writeError(w, r, g.log, errOrigin)
		return
	}
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		var de *httpx.DecodeError
		if errors.As(err, &de) {
			httpx.WriteProblem(w, r, de.Status, de.Code, de.Message, nil)
			return
		}
		writeError(w, r, g.log, err)
		return
	}
	body, err := json.Marshal(in)
	if err != nil {
		writeError(w, r, g.log, err)
		return
	}
	resp, err := g.callIdentity(r, http.MethodPost, "/v1/session", "", body)
	if err != nil {
		g.log.WarnContext(r.Context(), "identity login call failed", "err", safeError(err))
		writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service could not be reached"))
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxIdentityBody))
	if err != nil {
		writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service's answer was cut short"))
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		relay(w, resp, raw)
		return
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Token == "" {
		g.log.ErrorContext(r.Context(), "identity answered a login without a token", "status", resp.StatusCode)
		writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service answered unexpectedly"))
		return
	}
	claims, err := g.verifier.Verify(r.Context(), out.Token)
	if err != nil {
		if errs.Code(err) == CodeInvalidToken {
			// identity issued a token this gateway cannot verify: an
			// issuer or key-set misconfiguration, not the caller's fault.
			g.log.ErrorContext(r.Context(), "identity issued a token that does not verify; check IDENTITY_ISSUER")
			g.endIdentitySession(r, out.Token)
			writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service answered unexpectedly"))
			return
		}
		g.endIdentitySession(r, out.Token)
		writeError(w, r, g.log, err)
		return
	}
	id, err := g.sessions.Create(r.Context(), out.Token, claims.ExpiresAt)
	if err != nil {
		g.log.WarnContext(r.Context(), "session store write failed", "err", err.Error())
		// Nothing may be left half done: the identity session nobody can
		// use is ended again.
		g.endIdentitySession(r, out.Token)
		writeError(w, r, g.log, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    id,
		Path:     "/",
		Expires:  claims.ExpiresAt,
		MaxAge:   max(1, int(time.Until(claims.ExpiresAt).Seconds())),
		Secure:   true,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, sessionState{Authenticated: true, ExpiresAt: claims.ExpiresAt.UTC()})
}

// logout ends the browser session: first identity's session (so a token
// that ever leaked stops working), then the stored one, then the cookie. If
// identity cannot be reached the session is kept, so the caller can retry
// and nothing is left half ended.
func (g *Gateway) logout(w http.ResponseWriter, r *http.Request) {
	if !g.originAllowed(r) {
		writeError(w, r, g.log, errOrigin)
		return
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		clearSessionCookie(w)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sess, err := g.sessions.Get(r.Context(), c.Value)
	if errors.Is(err, session.ErrNotFound) {
		clearSessionCookie(w)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		g.log.WarnContext(r.Context(), "session store read failed", "err", err.Error())
		writeError(w, r, g.log, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter})
		return
	}
	resp, err := g.callIdentity(r, http.MethodDelete, "/v1/session", sess.Token, nil)
	if err != nil {
		g.log.WarnContext(r.Context(), "identity logout call failed", "err", safeError(err))
		writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service could not be reached; the session is still open"))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxIdentityBody))
	resp.Body.Close()
	// 401 means identity no longer knows the session: it has ended.
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusUnauthorized {
		g.log.WarnContext(r.Context(), "identity refused to end a session", "status", resp.StatusCode)
		writeError(w, r, g.log, errs.New(CodeUnavailable, "the identity service could not end the session; it is still open"))
		return
	}
	if err := g.sessions.Delete(r.Context(), c.Value); err != nil {
		g.log.WarnContext(r.Context(), "session store delete failed", "err", err.Error())
		writeError(w, r, g.log, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter})
		return
	}
	clearSessionCookie(w)
	w.WriteHeader(http.StatusNoContent)
}

// session reports whether the browser holds a live session.
func (g *Gateway) session(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		writeError(w, r, g.log, errNoSession)
		return
	}
	sess, err := g.sessions.Get(r.Context(), c.Value)
	if errors.Is(err, session.ErrNotFound) {
		clearSessionCookie(w)
		writeError(w, r, g.log, errNoSession)
		return
	}
	if err != nil {
		g.log.WarnContext(r.Context(), "session store read failed", "err", err.Error())
		writeError(w, r, g.log, &retryError{err: errSessionsDown, retryAfter: sessionRetryAfter})
		return
	}
	claims, err := g.verifier.Verify(r.Context(), sess.Token)
	if err != nil {
		if errs.Code(err) == CodeInvalidToken {
			clearSessionCookie(w)
			err = errNoSession
		}
		writeError(w, r, g.log, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, sessionState{Authenticated: true, ExpiresAt: claims.ExpiresAt.UTC()})
}

// callIdentity makes one of the gateway's own calls to identity for r,
// carrying r's trace and the caller's address.
func (g *Gateway) callIdentity(r *http.Request, method, path, bearer string, body []byte) (*http.Response, error) {
	u := g.opts.IdentityURL.JoinPath(path)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(r.Context()).Traceparent())
	req.Header.Set("X-Forwarded-For", clientIP(r, g.trust()))
	if ua := r.Header.Get("User-Agent"); ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return g.client.Do(req)
}

// endIdentitySession ends a session the gateway obtained but cannot keep,
// on its own short deadline so a caller that went away does not stop it.
func (g *Gateway) endIdentitySession(r *http.Request, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	resp, err := g.callIdentity(r.WithContext(ctx), http.MethodDelete, "/v1/session", token, nil)
	if err != nil {
		g.log.WarnContext(r.Context(), "could not end an unused identity session", "err", safeError(err))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxIdentityBody))
	resp.Body.Close()
}

// relay answers with identity's own error response.
func relay(w http.ResponseWriter, resp *http.Response, body []byte) {
	for _, h := range []string{"Content-Type", "Retry-After", "WWW-Authenticate"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// originAllowed is the CSRF check for cookie-authenticated state changes
// (operations.md section 8): the browser says the request is same-origin
// (Sec-Fetch-Site), or its Origin is exactly an allowed origin or, with
// none configured, the gateway's own: scheme, host and port.
func (g *Gateway) originAllowed(r *http.Request) bool {
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")), "same-origin") {
		return true
	}
	origin := strings.TrimSpace(r.Header.Get("Origin"))
	if origin == "" || origin == "null" {
		return false
	}
	if len(g.origins) > 0 {
		return g.origins[strings.ToLower(strings.TrimRight(origin, "/"))]
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" {
		return false
	}
	return strings.EqualFold(u.Scheme, requestProto(r, g.trust())) && strings.EqualFold(u.Host, r.Host)
}

func clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		Secure:   true,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
}
