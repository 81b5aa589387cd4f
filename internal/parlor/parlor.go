// Package parlor is the platform's web app: server-rendered pages for
// customers and the operator console. It keeps no database; every page is
// rendered from the public API, reached through the gateway with the
// signed-in user's identity session token, which lives only in an HttpOnly
// cookie that page script cannot read.
package parlor

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/httpx"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CookieName is the session cookie: identity's own name, so the gateway
// accepts the same cookie on the API routes. The __Host- prefix binds it
// to this exact origin (Secure, Path=/, no Domain).
const CookieName = "__Host-session"

// Deps are what the pages need.
type Deps struct {
	API    *Client
	Logger *slog.Logger
	// Ready answers /readyz; nil answers {"status":"ok","deps":"none"}.
	Ready func(context.Context) httpx.Readiness
}

// server holds the parsed pages and the API client.
type server struct {
	api   *Client
	log   *slog.Logger
	pages map[string]*template.Template
}

// session is the signed-in user of a request.
type session struct {
	Token string
	Me    Me
}

// page is what every template receives.
type page struct {
	Title string
	// User is nil on pages rendered for a signed-out visitor.
	User *Me
	// Notice is a confirmation of what the previous form did.
	Notice string
	// Error is a refusal of the whole form; Errors are per field.
	Error  string
	Errors map[string]string
	// Reference is the trace id of a failure (5xx), shown for support to
	// find it in the logs.
	Reference string
	// Trace is the trace id the API answered a refusal in: kept out of
	// sight in the page (a data attribute), since a refusal in words
	// needs no support reference.
	Trace string
	// Form echoes what the user typed, so a refused form keeps it.
	Form map[string]string
	// Account and Tab frame the per-account pages.
	Account *Account
	Tab     string
	Data    any
}

func newServer(d Deps) (*server, error) {
	s := &server{api: d.API, log: d.Logger, pages: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"when": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				if v.IsZero() {
					return ""
				}
				return v.UTC().Format("2006-01-02 15:04 UTC")
			case *time.Time:
				if v == nil {
					return ""
				}
				return v.UTC().Format("2006-01-02 15:04 UTC")
			}
			return ""
		},
		"deref": deref,
		// or2 is "either is set" for a pointer and a flag.
		"or2": func(a any, b bool) bool {
			if b {
				return true
			}
			switch v := a.(type) {
			case *Enrolment:
				return v != nil
			}
			return a != nil
		},
		"or": func(a, b string) string {
			if a != "" {
				return a
			}
			return b
		},
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Option("missingkey=zero").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, err
		}
		s.pages[base] = t
	}
	return s, nil
}

// render writes the page name with status. It renders into a buffer
// first, so a template failure is a clean 500 and never half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	t, ok := s.pages[name]
	if !ok {
		s.log.ErrorContext(r.Context(), "no such page template", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if p.Errors == nil {
		p.Errors = map[string]string{}
	}
	if p.Form == nil {
		p.Form = map[string]string{}
	}
	// A reference is for support to find a fault in the logs: only a
	// 5xx has one; a refusal in words needs none.
	switch {
	case status < 500:
		p.Reference = ""
	case p.Error != "" && p.Reference == "":
		p.Reference = httpx.TraceFrom(r.Context()).TraceID
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.ErrorContext(r.Context(), "render page", "page", name, "err", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// unavailableText is what a page says when the platform does not answer.
const unavailableText = "The platform is unavailable right now. Nothing was changed; please try again in a moment."

// fail renders the error page for a failed API call: 503 when the
// platform is unavailable, 404 for what the user cannot see, else the
// API's own words.
func (s *server) fail(w http.ResponseWriter, r *http.Request, user *Me, err error) {
	switch {
	case StatusOf(err) == http.StatusUnauthorized:
		// The session ended between the page's first call and this one
		// (signed out elsewhere, expired): sign in again.
		clearCookie(w)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
	case Unavailable(err):
		if StatusOf(err) == 0 || StatusOf(err) >= 500 {
			s.log.WarnContext(r.Context(), "platform API unavailable", "path", r.URL.Path, "err", err.Error())
		}
		s.unavailable(w, r, user)
	case StatusOf(err) == http.StatusNotFound:
		s.notFound(w, r, user)
	case StatusOf(err) == http.StatusForbidden:
		s.render(w, r, http.StatusForbidden, "error", &page{Title: "Not permitted", User: user, Error: sentence(err)})
	default:
		s.render(w, r, http.StatusBadRequest, "error", &page{Title: "Something is wrong", User: user, Error: sentence(err)})
	}
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request, user *Me) {
	s.render(w, r, http.StatusNotFound, "error", &page{Title: "Not found", User: user,
		Error: "There is nothing here, or it is not visible to you."})
}

// unavailable answers 503 with the page that asks to try again: the
// platform's API did not answer, or not as it should.
func (s *server) unavailable(w http.ResponseWriter, r *http.Request, user *Me) {
	s.render(w, r, http.StatusServiceUnavailable, "error", &page{Title: "Unavailable", User: user, Error: unavailableText})
}

// formFailure turns an API refusal of a form into the page's words: the
// field errors next to their inputs, and a sentence for the whole form.
// It returns the status the page is rendered with.
func formFailure(p *page, err error) int {
	if Unavailable(err) {
		p.Error = unavailableText
		return http.StatusServiceUnavailable
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		p.Error = unavailableText
		return http.StatusServiceUnavailable
	}
	if p.Errors == nil {
		p.Errors = map[string]string{}
	}
	p.Reference, p.Trace = ae.TraceID, ae.TraceID
	for field, rule := range ae.Fields {
		p.Errors[field] = fieldWords(field, rule)
	}
	if len(ae.Fields) == 0 || ae.Code != "validation_failed" && ae.Code != "unprocessable" {
		p.Error = sentence(err)
	} else {
		p.Error = "Please correct the fields marked below."
	}
	return ae.Status
}

// fieldWords is a field's rule in words.
func fieldWords(field, rule string) string {
	if strings.Contains(rule, " ") {
		// box's rules arrive as words already ("must be one of …").
		return "This " + strings.ReplaceAll(field, "_", " ") + " " + rule + "."
	}
	switch field + ":" + rule {
	case "password:too_short":
		return "The password must be at least 8 characters long."
	case "password:too_long":
		return "The password must be at most 128 characters long."
	case "email:invalid", "email:required":
		return "Enter a valid email address, such as name@example.com."
	case "name:too_short", "name:required":
		return "Enter a name."
	case "name:too_long":
		return "The name must be at most 120 characters long."
	case "name:invalid":
		return "The name contains characters that are not allowed."
	case "role:invalid":
		return "Choose admin or member; owners are made by promoting a member."
	case "role:last_owner":
		return "The last owner cannot be demoted: make another member an owner first."
	case "user_id:last_owner":
		return "The last owner cannot be removed: make another member an owner first."
	case "query:too_short", "query:required":
		return "Type at least 2 characters."
	case "new_password:too_short":
		return "The new password must be at least 8 characters long."
	case "new_password:too_long":
		return "The new password must be at most 128 characters long."
	case "current_password:required":
		return "Enter your current password."
	case "display_name:too_long":
		return "The display name is too long."
	}
	switch rule {
	case "required":
		return "This field is required."
	case "too_long":
		return "This is too long."
	case "too_short":
		return "This is too short."
	}
	return "This value is not valid."
}

// sentence is an API refusal as a sentence for the whole form.
func sentence(err error) string {
	var ae *APIError
	if !errors.As(err, &ae) {
		return unavailableText
	}
	switch ae.Code {
	case "unauthorized", "unauthenticated":
		return "Your session has ended. Please sign in again."
	case "account_locked":
		return lockedWords(err)
	case "personal_account":
		return "A personal account cannot be deleted; only team accounts can."
	case "forbidden":
		if ae.Message != "" {
			return capitalize(ae.Message)
		}
		return "Your role in this account does not permit this."
	case "invitation_expired":
		return "This invitation has expired. Ask the account's admin for a new one."
	case "invitation_used":
		return "This invitation has already been used."
	}
	if ae.Status >= 500 {
		return unavailableText
	}
	if ae.Message == "" {
		return "The platform refused this request (" + http.StatusText(ae.Status) + ")."
	}
	return capitalize(ae.Message)
}

func capitalize(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// currentSession reads the session cookie and asks identity who it is.
// It answers (nil, nil) for a visitor without a valid session, clearing a
// cookie identity no longer accepts.
func (s *server) currentSession(w http.ResponseWriter, r *http.Request) (*session, error) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	me, err := s.api.Me(r.Context(), c.Value)
	if err != nil {
		if StatusOf(err) == http.StatusUnauthorized {
			clearCookie(w)
			return nil, nil
		}
		return nil, err
	}
	return &session{Token: c.Value, Me: me}, nil
}

type authedHandler func(w http.ResponseWriter, r *http.Request, sess *session)

// authed runs h for a signed-in user; anyone else is sent to sign in and
// brought back here afterwards.
func (s *server) authed(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.currentSession(w, r)
		if err != nil {
			s.fail(w, r, nil, err)
			return
		}
		if sess == nil {
			next := r.URL.Path
			if r.Method == http.MethodGet && r.URL.RawQuery != "" {
				next += "?" + r.URL.RawQuery
			}
			if r.Method != http.MethodGet {
				next = "/app"
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
			return
		}
		h(w, r, sess)
	})
}

// staffOnly runs h for staff; for everyone else the console does not
// exist (404), so it reveals nothing about itself.
func (s *server) staffOnly(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.currentSession(w, r)
		if err != nil {
			s.fail(w, r, nil, err)
			return
		}
		if sess == nil || !sess.Me.Staff {
			var me *Me
			if sess != nil {
				me = &sess.Me
			}
			s.notFound(w, r, me)
			return
		}
		h(w, r, sess)
	})
}

func setCookie(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		Secure:   true,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
}

func clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		Secure:   true,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
}

// localPath keeps a post-sign-in destination on this site: a path, never
// a URL or a protocol-relative "//host".
func localPath(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/app"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/app"
	}
	return next
}

// contentSecurityPolicy allows only this origin's stylesheet and script
// files: no inline script or style, no framing, forms post only here.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds a posted form: every form here is a few short
// fields, so anything larger is refused before it is read.
const maxFormBytes = 64 << 10

// maxUploadFormBytes bounds a form that carries a file (a project's
// logo): the file itself is bounded lower by the page that reads it.
const maxUploadFormBytes = 2 << 20

// readForm caps request bodies at maxFormBytes (maxUploadFormBytes for a
// multipart form, which only a file upload sends) and parses a posted
// form once, so an oversized or malformed one is refused in words here
// rather than read as empty fields by the page.
func (s *server) readForm(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		limit, parse := int64(maxFormBytes), r.ParseForm
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
			limit, parse = maxUploadFormBytes, func() error { return r.ParseMultipartForm(maxUploadFormBytes) }
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := parse(); err != nil {
			status := http.StatusBadRequest
			msg := "This form could not be read. Open the page again and send it from there."
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				status, msg = http.StatusRequestEntityTooLarge, "This form is too large to send."
			}
			s.render(w, r, status, "error", &page{Title: "Not sent", Error: msg})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// secureHeaders sets the headers every answer carries.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
