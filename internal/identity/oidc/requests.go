package oidc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/ids"
)

// The web app (parlor) serves the authorization endpoint's pages: the
// provider sends the browser to SignInPath with the request's id, the
// app signs the user in with identity's own API (MFA step included), and
// answers the request through these endpoints with the user's session:
//
//	GET  /oauth2/requests/{id}        the client's name and the scopes
//	POST /oauth2/requests/{id}/allow  bind the request to the session's user, consented
//	POST /oauth2/requests/{id}/deny   bind it, refused
//	POST /oauth2/requests/{id}/resume bind it, on the consent the user gave before
//
// The user's consent is remembered per application (OIDCStore's
// consents): a request whose scopes it covers is answered with resume,
// without a page, unless it asks for consent again (prompt=consent); a
// prompt=none request can only be answered that way.
//
// The answer is a one-time redirect back to the provider's callback,
// carrying a key only the session that answered could have been given.
const (
	// SignInPath is the web app's sign-in page of an authorization request.
	SignInPath = "/oauth/sign-in"
	// ErrorPath is the web app's page for a request the callback refuses.
	ErrorPath = "/oauth/error"
	// SignedOutPath is the web app's page the end-session endpoint ends
	// at.
	SignedOutPath = "/oauth/signed-out"
	// CallbackPath is op's: the authorization endpoint plus /callback.
	CallbackPath = "/oauth2/authorize/callback"
)

// requests serves the web app's side of an authorization request and
// guards the callback.
type requests struct {
	svc       *identity.Service
	store     identity.OIDCStore
	issuer    string
	publicURL string
	// key signs the callback's binding of a request to the session that
	// answered it.
	key      []byte
	provider *op.Provider
	log      *slog.Logger
	now      func() time.Time
}

// requestView is what the web app shows of a request.
type requestView struct {
	ID         string   `json:"id"`
	ClientName string   `json:"client_name"`
	Scopes     []string `json:"scopes"`
	// RedirectURI is where the answer ends (registered, matched
	// exactly): the consent page's form may lead there.
	RedirectURI string    `json:"redirect_uri"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Prompt is the request's prompt parameter ("" when absent). With
	// "none" no page may be shown: the web app sends the browser to the
	// callback with error login_required or consent_required.
	Prompt string `json:"prompt"`
	// SignInRequired: the user must sign in on the sign-in page even if
	// the browser has a session, because the caller gave none, or its
	// session signed in longer ago than the request accepts (max_age;
	// prompt=login).
	SignInRequired bool `json:"sign_in_required"`
	// Consented: the caller's session may answer and its user's
	// remembered consent covers the request's scopes, which does not ask
	// for consent again: the web app answers with resume, showing no page.
	Consented bool `json:"consented"`
}

const errRequestGone = "the sign-in request is unknown, expired or already answered"

// open loads a request nobody has answered yet, of a client still
// honoured.
func (q *requests) open(r *http.Request, id string) (identity.OIDCAuthRequest, string, error) {
	if !ids.Valid(id) {
		return identity.OIDCAuthRequest{}, "", identity.ErrOIDCGrantUnknown
	}
	req, err := q.store.OIDCAuthRequest(r.Context(), id)
	if err != nil {
		return req, "", err
	}
	if req.UserID != "" {
		return req, "", identity.ErrOIDCGrantUnknown
	}
	c, _, err := q.store.OIDCClient(r.Context(), req.ClientID)
	if errors.Is(err, identity.ErrOIDCClientNotFound) || (err == nil && c.RevokedAt != nil) {
		return req, "", identity.ErrOIDCGrantUnknown
	}
	return req, c.Name, err
}

func (q *requests) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, identity.ErrOIDCGrantUnknown) {
		httpx.WriteProblem(w, r, http.StatusNotFound, identity.CodeNotFound, errRequestGone, nil)
		return
	}
	q.log.ErrorContext(r.Context(), "oidc request", "err", err)
	httpx.WriteProblem(w, r, http.StatusServiceUnavailable, "unavailable", "the provider cannot answer now; retry", nil)
}

// show needs no session (the id is the request's own capability); with
// one (a person's bearer session) it also says whether that session's
// sign-in is recent enough for the request.
func (q *requests) show(w http.ResponseWriter, r *http.Request) {
	req, name, err := q.open(r, r.PathValue("id"))
	if err != nil {
		q.fail(w, r, err)
		return
	}
	required, consented := true, false
	if token := bearer(r); token != "" {
		p, err := q.svc.Authenticate(r.Context(), token, "")
		switch {
		case err == nil && p.APIKey == nil && p.SessionID != "":
			_, fresh, err := q.signedIn(r, req, p.SessionID)
			if err != nil && errs.Code(err) != identity.CodeUnauthorized {
				q.fail(w, r, err)
				return
			}
			required = err != nil || !fresh
			if !required && !asksConsent(req) {
				k, err := q.store.OIDCConsent(r.Context(), p.User.ID, req.ClientID)
				if err != nil && !errors.Is(err, identity.ErrOIDCConsentNotFound) {
					q.fail(w, r, err)
					return
				}
				consented = err == nil && k.Covers(req.Scopes)
			}
		case err != nil && errs.Code(err) != identity.CodeUnauthorized:
			q.fail(w, r, err)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, requestView{ID: req.ID, ClientName: name, Scopes: req.Scopes, RedirectURI: req.RedirectURI,
		ExpiresAt: req.ExpiresAt, Prompt: req.Prompt, SignInRequired: required, Consented: consented})
}

// asksConsent: the request's prompt asks for the consent page even when
// the user allowed the application before (OIDC Core §3.1.2.1).
func asksConsent(req identity.OIDCAuthRequest) bool {
	return slices.Contains(strings.Fields(req.Prompt), oidc.PromptConsent)
}

func bearer(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// maxAgeCap bounds max_age: anything longer accepts every sign-in (and
// stays clear of time.Duration's range).
const maxAgeCap = 100 * 365 * 24 * 60 * 60

// signedIn is when session signed in (the ID token's auth_time) and
// whether that is recent enough for req (OIDC Core §3.1.2.1): with
// max_age (prompt=login is max_age 0), no longer ago than max_age, or
// after the request was made (a sign-in for this very request).
func (q *requests) signedIn(r *http.Request, req identity.OIDCAuthRequest, sessionID string) (time.Time, bool, error) {
	at, err := q.store.OIDCSessionSignedIn(r.Context(), sessionID)
	if err != nil {
		return at, false, err
	}
	if req.MaxAge == nil || *req.MaxAge > maxAgeCap || !at.Before(req.CreatedAt) {
		return at, true, nil
	}
	return at, q.now().Sub(at) <= time.Duration(*req.MaxAge)*time.Second, nil
}

// The answers a session may give a request.
type decision int

const (
	deny decision = iota
	allow
	// resume allows on the user's remembered consent, without a page.
	resume
)

// answer binds the request to the caller's session, once: the first
// answer wins and every later one finds the request gone.
func (q *requests) answer(d decision) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := q.svc.Authenticate(r.Context(), bearer(r), "")
		if err == nil && (p.APIKey != nil || p.SessionID == "") {
			// Only a person's session signs in to an application.
			err = identity.ErrUnauthorized
		}
		if err != nil {
			writeAuthFailure(w, r, q.log, err)
			return
		}
		req, _, err := q.open(r, r.PathValue("id"))
		switch {
		case err == nil && d != resume && req.Prompt == oidc.PromptNone:
			// No page may answer it: it ends at the callback with an
			// error, or with resume.
			err = identity.ErrOIDCGrantUnknown
		case err == nil && d == resume && asksConsent(req):
			err = identity.ErrOIDCConsentRequired
		}
		var authTime time.Time
		if err == nil {
			var fresh bool
			authTime, fresh, err = q.signedIn(r, req, p.SessionID)
			if err == nil && !fresh {
				httpx.WriteProblem(w, r, http.StatusUnauthorized, identity.CodeUnauthorized,
					"the application asks for a more recent sign-in: sign in again", nil)
				return
			}
			if errs.Code(err) == identity.CodeUnauthorized {
				writeAuthFailure(w, r, q.log, err)
				return
			}
		}
		switch {
		case err == nil && d == resume:
			err = q.store.ResumeOIDCAuthRequest(r.Context(), req.ID, p.User.ID, p.SessionID, authTime)
		case err == nil:
			err = q.store.SignInOIDCAuthRequest(r.Context(), req.ID, p.User.ID, p.SessionID, authTime)
		}
		if err == nil && d == allow {
			// Fails when another session answered in between: the
			// request is then bound to that one.
			err = q.store.ConsentOIDCAuthRequest(r.Context(), req.ID, p.User.ID)
		}
		if errors.Is(err, identity.ErrOIDCConsentRequired) {
			httpx.WriteProblem(w, r, http.StatusForbidden, "consent_required",
				"the user has not allowed every scope the application asks for: show the consent page", nil)
			return
		}
		if err != nil {
			q.fail(w, r, err)
			return
		}
		v := url.Values{"id": {req.ID}, "k": {q.mac(d != deny, req.ID, p.SessionID)}}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"redirect_to": q.issuer + CallbackPath + "?" + v.Encode()})
	}
}

func writeAuthFailure(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	switch {
	case errs.Code(err) == identity.CodeUnauthorized:
		httpx.WriteProblem(w, r, http.StatusUnauthorized, identity.CodeUnauthorized, "a valid session is required", nil)
	default:
		log.ErrorContext(r.Context(), "oidc request: authenticate", "err", err)
		httpx.WriteProblem(w, r, http.StatusServiceUnavailable, "unavailable", "the provider cannot answer now; retry", nil)
	}
}

// mac binds a request's answer to the session that gave it.
func (q *requests) mac(allow bool, id, sessionID string) string {
	m := hmac.New(sha256.New, q.key)
	decision := "deny"
	if allow {
		decision = "allow"
	}
	m.Write([]byte(decision + "\x00" + id + "\x00" + sessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// callback replaces op's: it lets through only the browser the answer
// was given to (the key), then issues the code (op's own callback) or
// sends the client access_denied. Anything else goes to the web app's
// error page, never to the client.
func (q *requests) callback(w http.ResponseWriter, r *http.Request) {
	id, k := r.URL.Query().Get("id"), r.URL.Query().Get("k")
	var (
		req identity.OIDCAuthRequest
		err error = identity.ErrOIDCGrantUnknown
	)
	if ids.Valid(id) {
		req, err = q.store.OIDCAuthRequest(r.Context(), id)
	}
	switch {
	case errors.Is(err, identity.ErrOIDCGrantUnknown):
		q.refuse(w, r, "expired")
	case err != nil:
		q.log.ErrorContext(r.Context(), "oidc callback", "err", err)
		q.refuse(w, r, "unavailable")
	case req.UserID == "" && req.Prompt == oidc.PromptNone && promptNoneErrors[r.URL.Query().Get("error")] != nil:
		// prompt=none: the web app found no session recent enough
		// (login_required) or one that would have to consent
		// (consent_required). Either only ends the request with an error
		// to its registered redirect URI, so any browser may ask for it.
		op.AuthRequestError(w, r, authRequest{req}, promptNoneErrors[r.URL.Query().Get("error")](), q.provider)
	case req.UserID == "":
		q.refuse(w, r, "unanswered")
	case req.Done && hmac.Equal([]byte(k), []byte(q.mac(true, req.ID, req.SessionID))):
		// op reads the request again by id, and its client: the memo
		// answers the first and keeps the second, and both go with the
		// code it issues (storage.SaveAuthCode).
		op.AuthorizeCallback(w, r.WithContext(context.WithValue(r.Context(), clientMemoKey{}, &clientMemo{answered: &req})), q.provider)
	case !req.Done && hmac.Equal([]byte(k), []byte(q.mac(false, req.ID, req.SessionID))):
		op.AuthRequestError(w, r, authRequest{req}, oidc.ErrAccessDenied().WithDescription("the user did not allow the request"), q.provider)
	default:
		q.refuse(w, r, "browser")
	}
}

// promptNoneErrors are the errors the web app may end a prompt=none
// request with.
var promptNoneErrors = map[string]func() *oidc.Error{
	"login_required":   oidc.ErrLoginRequired,
	"consent_required": func() *oidc.Error { return &oidc.Error{ErrorType: "consent_required"} },
}

func (q *requests) refuse(w http.ResponseWriter, r *http.Request, reason string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, q.publicURL+ErrorPath+"?reason="+reason, http.StatusSeeOther)
}
