package parlor

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/ids"
)

// The authorization endpoint's pages (identity-lifecycle.md §6): identity
// sends a browser here with an authorization request's id; the user signs
// in (with the MFA step when they have one) and allows or denies the
// application; identity's answer sends the browser back to its callback,
// which redirects to the application.

// oauthCallbackPath is identity's callback, behind the gateway on this
// origin. An answer is followed only to this path, so no answer can send
// the browser anywhere else.
const oauthCallbackPath = "/oauth2/authorize/callback"

// OAuthRequest is an authorization request as the pages show it.
type OAuthRequest struct {
	ID          string    `json:"id"`
	ClientName  string    `json:"client_name"`
	Scopes      []string  `json:"scopes"`
	RedirectURI string    `json:"redirect_uri"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Prompt is the application's prompt parameter; "none" means no page
	// may be shown.
	Prompt string `json:"prompt"`
	// SignInRequired: the sign-in form must be shown even to a signed-in
	// browser (no session was given, or it signed in longer ago than the
	// application accepts: prompt=login, max_age).
	SignInRequired bool `json:"sign_in_required"`
	// Consented: the session may answer and the user allowed the
	// application every scope it asks for before (and it does not ask
	// again with prompt=consent): no page is shown.
	Consented bool `json:"consented"`
}

// OAuthRequest loads an unanswered authorization request (no session
// needed: the id is the request's own capability); with the session's
// token ("" for none) it also says whether that session may answer it.
func (c *Client) OAuthRequest(ctx context.Context, token, id string) (OAuthRequest, error) {
	var r OAuthRequest
	err := c.do(ctx, token, "GET", "/oauth2/requests/"+url.PathEscape(id), nil, &r)
	return r, err
}

// AnswerOAuthRequest allows or denies a request as the session's user and
// returns where identity sends the browser next.
func (c *Client) AnswerOAuthRequest(ctx context.Context, token, id string, allow bool) (string, error) {
	decision := "deny"
	if allow {
		decision = "allow"
	}
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	err := c.do(ctx, token, "POST", "/oauth2/requests/"+url.PathEscape(id)+"/"+decision, nil, &out)
	return out.RedirectTo, err
}

// ResumeOAuthRequest answers a request on the consent the user gave the
// application before, showing no page, and returns where identity sends
// the browser next. A 403 (consent_required) means the consent no longer
// covers the request.
func (c *Client) ResumeOAuthRequest(ctx context.Context, token, id string) (string, error) {
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	err := c.do(ctx, token, "POST", "/oauth2/requests/"+url.PathEscape(id)+"/resume", nil, &out)
	return out.RedirectTo, err
}

// OIDCConsent is an application the user allowed to sign them in.
type OIDCConsent struct {
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name"`
	Scopes     []string  `json:"scopes"`
	GrantedAt  time.Time `json:"granted_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// OIDCConsents lists the applications the session's user connected.
func (c *Client) OIDCConsents(ctx context.Context, token string) ([]OIDCConsent, error) {
	var out struct {
		OIDCConsents []OIDCConsent `json:"oidc_consents"`
	}
	err := c.do(ctx, token, "GET", "/v1/me/oidc_consents", nil, &out)
	return out.OIDCConsents, err
}

// WithdrawOIDCConsent disconnects an application: identity forgets the
// consent and revokes its tokens for the user.
func (c *Client) WithdrawOIDCConsent(ctx context.Context, token, clientID string) error {
	return c.do(ctx, token, "DELETE", "/v1/me/oidc_consents/"+url.PathEscape(clientID), nil, nil)
}

// scopeWords are the scopes as the consent page names them.
var scopeWords = map[string]string{
	"openid":         "Know who you are on the platform (your user id)",
	"email":          "See your email address",
	"profile":        "See your name",
	"offline_access": "Stay connected while you are away (until you sign out of it or it is revoked)",
	"accounts":       "See the accounts you belong to and your role in each",
}

// oauthData is the sign-in and consent pages' content.
type oauthData struct {
	ID     string
	Client string
	Scopes []string
	// Consent is this request's consent page, where sign-in leads.
	Consent string
	// Application is the origin of the request's redirect URI.
	Application string
	// PromptNone: no page may be shown (see oauthPromptNone).
	PromptNone bool
	// SignInRequired: the session given (if any) may not answer; the
	// user signs in on the sign-in page.
	SignInRequired bool
	// Consented: the user allowed these scopes before; the request is
	// answered without the consent page.
	Consented bool
}

func consentPath(id string) string { return "/oauth/consent?authRequestID=" + url.QueryEscape(id) }
func signInPath(id string) string  { return "/oauth/sign-in?authRequestID=" + url.QueryEscape(id) }

// oauthRequest loads the request a page names, or renders why it cannot:
// 400 for a malformed id, 404 for one identity does not know (expired,
// already answered, its application deleted), 503 when identity is away.
func (s *server) oauthRequest(w http.ResponseWriter, r *http.Request, id string, sess *session) (*oauthData, bool) {
	var user *Me
	token := ""
	if sess != nil {
		user, token = &sess.Me, sess.Token
	}
	if !ids.Valid(id) {
		s.render(w, r, http.StatusBadRequest, "error", &page{Title: "Sign-in link not valid", User: user,
			Error: "This sign-in link is not valid. Go back to the application and sign in from there."})
		return nil, false
	}
	req, err := s.api.OAuthRequest(r.Context(), token, id)
	if err != nil {
		s.oauthFailure(w, r, user, err)
		return nil, false
	}
	d := &oauthData{ID: req.ID, Client: req.ClientName, Consent: consentPath(req.ID), Application: originOf(req.RedirectURI),
		PromptNone: req.Prompt == "none", SignInRequired: req.SignInRequired, Consented: req.Consented}
	for _, sc := range req.Scopes {
		if words, ok := scopeWords[sc]; ok {
			d.Scopes = append(d.Scopes, words)
		}
	}
	return d, true
}

func (s *server) oauthFailure(w http.ResponseWriter, r *http.Request, user *Me, err error) {
	if StatusOf(err) == http.StatusNotFound {
		s.render(w, r, http.StatusNotFound, "error", &page{Title: "Sign-in request ended", User: user,
			Error: "This sign-in request has expired or was already answered. Go back to the application and sign in again."})
		return
	}
	s.fail(w, r, user, err)
}

// oauthSignInForm shows the sign-in form, or, for a user whose session
// may answer the request, the consent page straight away. A prompt=none
// request shows neither (oauthPromptNone).
func (s *server) oauthSignInForm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	d, ok := s.oauthRequest(w, r, r.URL.Query().Get("authRequestID"), sess)
	if !ok {
		return
	}
	switch {
	case d.PromptNone:
		s.oauthPromptNone(w, r, d, sess)
	case sess != nil && !d.SignInRequired:
		http.Redirect(w, r, d.Consent, http.StatusSeeOther)
	default:
		// Signed out, or signed in longer ago than the application
		// accepts: the user signs in again.
		s.render(w, r, http.StatusOK, "oauth_signin", &page{Title: "Sign in to " + d.Client, Data: d})
	}
}

// oauthPromptNone answers a prompt=none request without a page (OIDC Core
// §3.1.2.6): on the user's remembered consent when their session may
// answer and the consent covers the request; otherwise identity's
// callback sends the application login_required when no session may
// answer, else consent_required.
func (s *server) oauthPromptNone(w http.ResponseWriter, r *http.Request, d *oauthData, sess *session) {
	reason := "consent_required"
	switch {
	case sess == nil || d.SignInRequired:
		reason = "login_required"
	case d.Consented:
		next, err := s.api.ResumeOAuthRequest(r.Context(), sess.Token, d.ID)
		if StatusOf(err) != http.StatusForbidden && StatusOf(err) != http.StatusUnauthorized {
			s.oauthFollow(w, r, sess, d.ID, next, err)
			return
		}
		// The consent was withdrawn, or the session ended, in between.
		if StatusOf(err) == http.StatusUnauthorized {
			reason = "login_required"
		}
	}
	http.Redirect(w, r, oauthCallbackPath+"?"+url.Values{"id": {d.ID}, "error": {reason}}.Encode(), http.StatusSeeOther)
}

func (s *server) oauthSignIn(w http.ResponseWriter, r *http.Request) {
	d, ok := s.oauthRequest(w, r, r.PostFormValue("authRequestID"), nil)
	if !ok {
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	p := &page{Title: "Sign in to " + d.Client, Data: d, Form: map[string]string{"email": email}}
	sess, err := s.api.SignIn(r.Context(), email, r.PostFormValue("password"))
	if CodeOf(err) == "mfa_required" {
		// The MFA step is the sign-in's own; it comes back to consent.
		s.renderMFAStep(w, r, http.StatusOK, &page{}, challengeOf(err), d.Consent)
		return
	}
	if err != nil {
		status := formFailure(p, err)
		if StatusOf(err) == http.StatusUnauthorized {
			p.Error = "The email address or the password is wrong."
		}
		s.render(w, r, status, "oauth_signin", p)
		return
	}
	setCookie(w, sess.Token, sess.ExpiresAt)
	http.Redirect(w, r, d.Consent, http.StatusSeeOther)
}

// oauthSession is the signed-in user of a consent request; a visitor
// without a session is sent to the request's sign-in page.
func (s *server) oauthSession(w http.ResponseWriter, r *http.Request, id string) (*session, bool) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return nil, false
	}
	if sess == nil {
		if !ids.Valid(id) {
			s.oauthRequest(w, r, id, nil)
			return nil, false
		}
		http.Redirect(w, r, signInPath(id), http.StatusSeeOther)
		return nil, false
	}
	return sess, true
}

func (s *server) oauthConsentForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("authRequestID")
	sess, ok := s.oauthSession(w, r, id)
	if !ok {
		return
	}
	d, ok := s.oauthRequest(w, r, id, sess)
	if !ok {
		return
	}
	if d.PromptNone || d.SignInRequired {
		// The sign-in page decides: a fresh sign-in, or prompt=none's end.
		http.Redirect(w, r, signInPath(id), http.StatusSeeOther)
		return
	}
	if d.Consented {
		// The user allowed these scopes before: no page.
		next, err := s.api.ResumeOAuthRequest(r.Context(), sess.Token, id)
		if StatusOf(err) != http.StatusForbidden {
			s.oauthFollow(w, r, sess, id, next, err)
			return
		}
		// The consent was withdrawn in between: ask on the page.
	}
	if d.Application != "" {
		// The answer's redirects end at the application, and a browser
		// holds a form's redirects to the page's form-action.
		w.Header().Set("Content-Security-Policy",
			strings.Replace(contentSecurityPolicy, "form-action 'self'", "form-action 'self' "+d.Application, 1))
	}
	s.render(w, r, http.StatusOK, "oauth_consent", &page{Title: "Allow " + d.Client, User: &sess.Me, Data: d})
}

// oauthConsent answers the request and follows identity's answer back to
// its callback, which sends the browser on to the application.
func (s *server) oauthConsent(w http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("authRequestID")
	sess, ok := s.oauthSession(w, r, id)
	if !ok {
		return
	}
	decision := r.PostFormValue("decision")
	if decision != "allow" && decision != "deny" {
		s.render(w, r, http.StatusBadRequest, "error", &page{Title: "Not sent", User: &sess.Me,
			Error: "Choose Allow or Deny on the consent page."})
		return
	}
	if !ids.Valid(id) {
		s.oauthRequest(w, r, id, sess)
		return
	}
	next, err := s.api.AnswerOAuthRequest(r.Context(), sess.Token, id, decision == "allow")
	s.oauthFollow(w, r, sess, id, next, err)
}

// oauthFollow follows identity's answer to request id back to its
// callback, which sends the browser on to the application.
func (s *server) oauthFollow(w http.ResponseWriter, r *http.Request, sess *session, id, next string, err error) {
	if StatusOf(err) == http.StatusUnauthorized {
		// The session ended, or signed in longer ago than the
		// application accepts: the sign-in page asks for a fresh sign-in.
		http.Redirect(w, r, signInPath(id), http.StatusSeeOther)
		return
	}
	if err != nil {
		s.oauthFailure(w, r, &sess.Me, err)
		return
	}
	u, err := url.Parse(next)
	if err != nil || u.Path != oauthCallbackPath || u.Query().Get("id") != id {
		s.log.Error("identity answered an authorization request with an unexpected redirect", "path", u.Path)
		s.unavailable(w, r, &sess.Me)
		return
	}
	http.Redirect(w, r, oauthCallbackPath+"?"+u.RawQuery, http.StatusSeeOther)
}

// oauthErrors are the callback's refusals, by the reason it names, so no
// text from the query string reaches the page.
var oauthErrors = map[string]struct {
	status int
	text   string
}{
	"expired":    {http.StatusNotFound, "This sign-in request has expired or was already used. Go back to the application and sign in again."},
	"unanswered": {http.StatusBadRequest, "This sign-in was not finished. Go back to the application and sign in again."},
	"browser":    {http.StatusForbidden, "This sign-in was finished in another browser window, or its link was changed, so it was stopped. Go back to the application and sign in again."},
}

// cspHost is a host[:port] safe to name in a policy.
var cspHost = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)

// originOf is an http(s) URL's origin as a policy source, "" for
// anything else.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !cspHost.MatchString(u.Host) {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// oauthError is where identity's callback sends a browser it refuses.
func (s *server) oauthError(w http.ResponseWriter, r *http.Request) {
	var user *Me
	if sess, err := s.currentSession(w, r); err == nil && sess != nil {
		user = &sess.Me
	}
	reason := r.URL.Query().Get("reason")
	if reason == "unavailable" {
		s.unavailable(w, r, user)
		return
	}
	e, ok := oauthErrors[reason]
	if !ok {
		e = oauthErrors["unanswered"]
	}
	s.render(w, r, e.status, "error", &page{Title: "Sign-in stopped", User: user, Error: e.text})
}

// oauthSignedOut is where the OpenID Provider's end-session endpoint
// sends the browser once it ended the application's tokens.
func (s *server) oauthSignedOut(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Signed out of the application"}
	if sess, err := s.currentSession(w, r); err == nil && sess != nil {
		p.User = &sess.Me
	}
	s.render(w, r, http.StatusOK, "oauth_signed_out", p)
}

// settingsData is the settings page's content beyond the user.
type settingsData struct {
	// Applications are the applications the user connected.
	Applications []connectedApp
	// Push is the devices section; nil while push is off.
	Push *pushDevices
	// Sessions are the user's open sessions, this browser's marked.
	Sessions []SessionInfo
}

type connectedApp struct {
	OIDCConsent
	// Allowed is what the application may do, in the consent page's
	// words.
	Allowed []string
}

// renderSettings renders the settings page with the user's connected
// applications.
func (s *server) renderSettings(w http.ResponseWriter, r *http.Request, status int, sess *session, p *page) {
	var (
		sessions    []SessionInfo
		sessionsErr error
		wg          sync.WaitGroup
	)
	wg.Go(func() { sessions, sessionsErr = s.api.Sessions(r.Context(), sess.Token) })
	ks, err := s.api.OIDCConsents(r.Context(), sess.Token)
	wg.Wait()
	if err == nil {
		err = sessionsErr
	}
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	d := settingsData{Applications: make([]connectedApp, 0, len(ks)), Sessions: sessions}
	for _, k := range ks {
		a := connectedApp{OIDCConsent: k}
		for _, sc := range k.Scopes {
			if words, ok := scopeWords[sc]; ok {
				a.Allowed = append(a.Allowed, words)
			}
		}
		d.Applications = append(d.Applications, a)
	}
	if d.Push, err = s.pushSection(r.Context(), sess.Token); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p.Data = d
	s.render(w, r, status, "settings", p)
}

// disconnectApp withdraws the user's consent to an application: its
// tokens for the user are revoked and its next sign-in asks again.
func (s *server) disconnectApp(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.WithdrawOIDCConsent(r.Context(), sess.Token, r.PathValue("client")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/settings?done=disconnected", http.StatusSeeOther)
}
