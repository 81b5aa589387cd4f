package oidc

import (
	"bytes"
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/ids"
)

// pages are the authorization endpoint's sign-in and consent pages,
// served by identity itself: minimal HTML over identity's session.
type pages struct {
	svc          *identity.Service
	store        identity.OIDCStore
	issuer       string
	secureCookie bool
	log          *slog.Logger
}

// sessionCookie is identity's browser session (httpapi.SessionCookie).
const sessionCookie = "__Host-session"

// requestCookie binds a sign-in to the browser that made it, so a consent
// page cannot be completed in another browser (login CSRF).
func (p *pages) requestCookie() string {
	if p.secureCookie {
		return "__Host-oidc-request"
	}
	return "oidc-request"
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}}</title></head><body><main>
<h1>{{.Title}}</h1>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
{{if eq .Kind "login"}}
<p>Sign in to continue to <strong>{{.Client}}</strong>.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="id" value="{{.ID}}">
<label>Email <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
{{else}}
<p><strong>{{.Client}}</strong> asks to use your identity ({{.Email}}) with these scopes:</p>
<ul>{{range .Scopes}}<li>{{.}}</li>{{end}}</ul>
<form method="post" action="{{.Action}}">
<input type="hidden" name="id" value="{{.ID}}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
{{end}}
</main></body></html>`))

type pageData struct {
	Kind, Title, Error, Client, Email, Action, ID string
	Scopes                                        []string
}

func render(w http.ResponseWriter, status int, d pageData) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// request loads a pending authorization request and its client's name.
func (p *pages) request(ctx context.Context, id string) (identity.OIDCAuthRequest, string, bool) {
	if !ids.Valid(id) {
		return identity.OIDCAuthRequest{}, "", false
	}
	r, err := p.store.OIDCAuthRequest(ctx, id)
	if err != nil || r.Done {
		return r, "", false
	}
	c, _, err := p.store.OIDCClient(ctx, r.ClientID)
	if err != nil || c.RevokedAt != nil {
		return r, "", false
	}
	return r, c.Name, true
}

func gone(w http.ResponseWriter) {
	render(w, http.StatusNotFound, pageData{Kind: "error", Title: "This sign-in request is unknown or has expired", Error: "Start again from the application."})
}

// crossSite refuses a state change another site's page started.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// login shows the sign-in form, or, for a browser that already holds
// identity's session, skips it.
func (p *pages) login(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	req, name, ok := p.request(r.Context(), id)
	if !ok {
		gone(w)
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if pr, err := p.svc.Authenticate(r.Context(), c.Value, ""); err == nil {
			p.signedIn(w, r, req.ID, pr.User.ID, pr.SessionID)
			return
		}
	}
	render(w, http.StatusOK, pageData{Kind: "login", Title: "Sign in", Client: name, Action: LoginPath, ID: req.ID})
}

func (p *pages) signIn(w http.ResponseWriter, r *http.Request) {
	if crossSite(r) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	req, name, ok := p.request(r.Context(), r.PostForm.Get("id"))
	if !ok {
		gone(w)
		return
	}
	token, sess, err := p.svc.Login(r.Context(), r.PostForm.Get("email"), r.PostForm.Get("password"))
	if err != nil {
		msg, status := "The email address or password is wrong.", http.StatusUnauthorized
		switch code := errs.Code(err); {
		case code == identity.CodeLocked:
			msg, status = "Too many failed attempts; try again later.", http.StatusLocked
		case code != identity.CodeUnauthorized:
			p.log.ErrorContext(r.Context(), "oidc sign-in failed", "err", err)
			msg, status = "Sign-in is unavailable; try again later.", http.StatusServiceUnavailable
		}
		render(w, status, pageData{Kind: "login", Title: "Sign in", Error: msg, Client: name, Action: LoginPath, ID: req.ID})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: token, Path: "/", Expires: sess.ExpiresAt,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
	p.signedIn(w, r, req.ID, sess.UserID, sess.ID)
}

func (p *pages) signedIn(w http.ResponseWriter, r *http.Request, id, userID, sessionID string) {
	if err := p.store.SignInOIDCAuthRequest(r.Context(), id, userID, sessionID); err != nil {
		gone(w)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: p.requestCookie(), Value: id, Path: "/", MaxAge: int(identity.OIDCAuthRequestTTL / time.Second),
		Secure: p.secureCookie, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, ConsentPath+"?id="+url.QueryEscape(id), http.StatusSeeOther)
}

// bound loads a signed-in request of this browser.
func (p *pages) bound(r *http.Request, id string) (identity.OIDCAuthRequest, string, bool) {
	c, err := r.Cookie(p.requestCookie())
	if err != nil || c.Value != id {
		return identity.OIDCAuthRequest{}, "", false
	}
	req, name, ok := p.request(r.Context(), id)
	if !ok || req.UserID == "" {
		return req, "", false
	}
	return req, name, true
}

func (p *pages) consent(w http.ResponseWriter, r *http.Request) {
	req, name, ok := p.bound(r, r.URL.Query().Get("id"))
	if !ok {
		gone(w)
		return
	}
	u, err := p.store.OIDCUser(r.Context(), req.UserID)
	if err != nil {
		gone(w)
		return
	}
	render(w, http.StatusOK, pageData{Kind: "consent", Title: "Allow access", Client: name, Email: u.User.Email, Scopes: req.Scopes, Action: ConsentPath, ID: req.ID})
}

// decide records the user's answer and returns to the provider, which
// redirects to the client: with a code when allowed, access_denied not.
func (p *pages) decide(w http.ResponseWriter, r *http.Request) {
	if crossSite(r) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	req, _, ok := p.bound(r, r.PostForm.Get("id"))
	if !ok {
		gone(w)
		return
	}
	if r.PostForm.Get("decision") == "allow" {
		if err := p.store.ConsentOIDCAuthRequest(r.Context(), req.ID, req.UserID); err != nil {
			gone(w)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: p.requestCookie(), Path: "/", MaxAge: -1, Secure: p.secureCookie, HttpOnly: true})
	http.Redirect(w, r, p.issuer+callbackPath+"?id="+url.QueryEscape(req.ID), http.StatusSeeOther)
}
