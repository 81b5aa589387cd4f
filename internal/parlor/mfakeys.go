package parlor

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"html/template"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pquerna/otp"
)

// Enrolment is a TOTP enrolment as identity answers it, shown once.
type Enrolment struct {
	Secret        string   `json:"secret"`
	OTPAuthURL    string   `json:"otpauth_url"`
	RecoveryCodes []string `json:"recovery_codes"`
}

// APIKey is an account's API key as listed (never its token).
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// SignInMFA finishes a sign-in answered mfa_required.
func (c *Client) SignInMFA(ctx context.Context, challenge, code string) (Session, error) {
	var s Session
	err := c.do(ctx, "", "POST", "/v1/session/mfa", map[string]string{"challenge": challenge, "code": code}, &s)
	return s, err
}

// EnrolTOTP starts (or rotates) the caller's TOTP factor.
func (c *Client) EnrolTOTP(ctx context.Context, token, password string) (Enrolment, error) {
	var e Enrolment
	err := c.do(ctx, token, "POST", "/v1/me/mfa/totp", map[string]string{"password": password}, &e)
	return e, err
}

// ConfirmTOTP activates the pending enrolment.
func (c *Client) ConfirmTOTP(ctx context.Context, token, code string) error {
	return c.do(ctx, token, "POST", "/v1/me/mfa/totp/confirm", map[string]string{"code": code}, nil)
}

// DisableTOTP turns MFA off with a valid code.
func (c *Client) DisableTOTP(ctx context.Context, token, code string) error {
	return c.do(ctx, token, "DELETE", "/v1/me/mfa/totp", map[string]string{"code": code}, nil)
}

// APIKeys lists an account's live API keys.
func (c *Client) APIKeys(ctx context.Context, token, id string) ([]APIKey, error) {
	var out struct {
		APIKeys []APIKey `json:"api_keys"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/api_keys", nil, &out)
	return out.APIKeys, err
}

// CreateAPIKey issues a key; the token is in the answer only.
func (c *Client) CreateAPIKey(ctx context.Context, token, id, name string, scopes []string) (APIKey, string, error) {
	var out struct {
		APIKey APIKey `json:"api_key"`
		Token  string `json:"token"`
	}
	err := c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/api_keys", map[string]any{"name": name, "scopes": scopes}, &out)
	return out.APIKey, out.Token, err
}

// RevokeAPIKey revokes a key of the account.
func (c *Client) RevokeAPIKey(ctx context.Context, token, id, keyID string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(id)+"/api_keys/"+url.PathEscape(keyID), nil, nil)
}

func challengeOf(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Challenge
	}
	return ""
}

// mfaStepData is the second sign-in step's content.
type mfaStepData struct{ Challenge, Next string }

func (s *server) renderMFAStep(w http.ResponseWriter, r *http.Request, status int, p *page, challenge, next string) {
	p.Title, p.Data = "Two-factor authentication", mfaStepData{challenge, next}
	s.render(w, r, status, "signin_mfa", p)
}

func (s *server) signinMFA(w http.ResponseWriter, r *http.Request) {
	challenge, next := r.PostFormValue("challenge"), r.PostFormValue("next")
	sess, err := s.api.SignInMFA(r.Context(), challenge, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		p := &page{}
		status := formFailure(p, err)
		switch CodeOf(err) {
		case "invalid_code":
			status = http.StatusUnprocessableEntity
			p.Error = ""
			p.Errors["code"] = "That code is wrong or was already used. Wait for the next code, or use a recovery code."
		case "token_expired", "token_used", "not_found":
			p.Error = "This sign-in has expired. Please sign in again."
			s.render(w, r, status, "signin", &page{Title: "Sign in", Error: p.Error, Form: map[string]string{"next": next}})
			return
		}
		s.renderMFAStep(w, r, status, p, challenge, next)
		return
	}
	setCookie(w, sess.Token, sess.ExpiresAt)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// securityData is the security page's content: an enrolment just
// started (shown once), with its QR code rendered here as a PNG data URL
// so no secret leaves the page in a URL and the policy's img-src data:
// admits it.
type securityData struct {
	State     MFAState
	Enrolment *Enrolment
	QR        template.URL
}

func (s *server) security(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderSecurity(w, r, sess, http.StatusOK, &page{Notice: notice(r)}, nil)
}

// renderSecurity shows the two-factor state and only its next step: an
// enrolment (just started, or kept after a mistyped code) to confirm,
// else setting up, else turning off or replacing the authenticator.
func (s *server) renderSecurity(w http.ResponseWriter, r *http.Request, sess *session, status int, p *page, en *Enrolment) {
	st, err := s.api.MFAState(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	d := securityData{State: st, Enrolment: en}
	if en != nil {
		if d.QR, err = qrDataURL(en.OTPAuthURL); err != nil {
			s.fail(w, r, &sess.Me, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
	}
	p.Title, p.User, p.Data = "Security", &sess.Me, d
	s.render(w, r, status, "security", p)
}

func (s *server) enrolMFA(w http.ResponseWriter, r *http.Request, sess *session) {
	en, err := s.api.EnrolTOTP(r.Context(), sess.Token, r.PostFormValue("password"))
	if err != nil {
		p := &page{}
		status := formFailure(p, err)
		if CodeOf(err) == "invalid_credentials" {
			p.Error = ""
			p.Errors["password"] = "The password is wrong."
		}
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderSecurity(w, r, sess, status, p, nil)
		return
	}
	s.renderSecurity(w, r, sess, http.StatusOK, &page{}, &en)
}

// qrDataURL renders an otpauth URL as a QR code PNG (pquerna/otp draws
// it with boombuler/barcode, which it already depends on).
func qrDataURL(otpauth string) (template.URL, error) {
	key, err := otp.NewKeyFromURL(otpauth)
	if err != nil {
		return "", err
	}
	img, err := key.Image(240, 240)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", err
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}

// confirmMFA turns the pending enrolment on. A mistyped code keeps the
// enrolment on the page (its QR code, secret and recovery codes come
// back with the form), so the user types the next code rather than
// starting over.
func (s *server) confirmMFA(w http.ResponseWriter, r *http.Request, sess *session) {
	err := s.api.ConfirmTOTP(r.Context(), sess.Token, strings.TrimSpace(r.PostFormValue("code")))
	if err == nil {
		http.Redirect(w, r, "/app/security?done=mfa_on", http.StatusSeeOther)
		return
	}
	if CodeOf(err) != "invalid_code" {
		s.codeFailure(w, r, sess, err, "confirm_code")
		return
	}
	var en *Enrolment
	if u := r.PostFormValue("otpauth_url"); strings.HasPrefix(u, "otpauth://") {
		en = &Enrolment{Secret: r.PostFormValue("secret"), OTPAuthURL: u, RecoveryCodes: strings.Fields(r.PostFormValue("recovery_codes"))}
	}
	p := &page{Errors: map[string]string{"confirm_code": "That code is wrong or was already used. Type the code your app shows now."}}
	s.renderSecurity(w, r, sess, http.StatusUnprocessableEntity, p, en)
}

func (s *server) disableMFA(w http.ResponseWriter, r *http.Request, sess *session) {
	s.codeForm(w, r, sess, s.api.DisableTOTP, "disable_code", "mfa_off")
}

// codeForm sends a code-proven request; a wrong code is the field's
// error, never the session's end (identity answers it 401 invalid_code).
func (s *server) codeForm(w http.ResponseWriter, r *http.Request, sess *session,
	call func(ctx context.Context, token, code string) error, field, done string) {
	if err := call(r.Context(), sess.Token, strings.TrimSpace(r.PostFormValue("code"))); err != nil {
		s.codeFailure(w, r, sess, err, field)
		return
	}
	http.Redirect(w, r, "/app/security?done="+done, http.StatusSeeOther)
}

// codeFailure explains a refused code next to its field.
func (s *server) codeFailure(w http.ResponseWriter, r *http.Request, sess *session, err error, field string) {
	p := &page{}
	status := formFailure(p, err)
	switch CodeOf(err) {
	case "invalid_code":
		status, p.Error = http.StatusUnprocessableEntity, ""
		p.Errors[field] = "That code is wrong or was already used."
	case "not_found":
		status, p.Error = http.StatusUnprocessableEntity, "There is no two-factor setup to act on."
	case "unauthorized":
		s.fail(w, r, &sess.Me, err)
		return
	}
	if status == http.StatusServiceUnavailable {
		s.unavailable(w, r, &sess.Me)
		return
	}
	s.renderSecurity(w, r, sess, status, p, nil)
}

// apiKeysData is the API keys page's content; Token is set only on the
// answer that created a key.
type apiKeysData struct {
	Keys   []APIKey
	Scopes []scopeChoice
	Token  string
}

// scopeChoice is one scope's checkbox: its name, what it lets a key do,
// and whether the refused form had it ticked.
type scopeChoice struct {
	Name, Description string
	Checked           bool
}

// apiKeyScopes are identity's closed set of scopes an account's admin
// may give, in words. One more, releases:publish, only staff give, on
// the console's Releases page (operator_keys.go).
var apiKeyScopes = []scopeChoice{
	{Name: "account:read", Description: "Read this account: its name, handle and the key's own scopes."},
	{Name: "entitlements:read", Description: "List the products this account holds."},
	{Name: "artifacts:fetch", Description: "Get download capabilities for the products it holds (what a CI pipeline needs)."},
	{Name: "releases:read", Description: "List the releases of the products it holds."},
	{Name: "releases:approve", Description: "Approve a release on this account's behalf."},
	{Name: "projects:write", Description: "Publish and change this account's projects in the public registry."},
	{Name: "installations:write", Description: "Activate installations of the products it holds and renew their licence files (what installed software needs)."},
	{Name: "models:invoke", Description: "Call models through the platform's OpenAI-compatible endpoint (metered)."},
}

// scopesTicked is the scope list with the ticked ones marked.
func scopesTicked(ticked []string) []scopeChoice {
	out := make([]scopeChoice, len(apiKeyScopes))
	for i, sc := range apiKeyScopes {
		sc.Checked = slices.Contains(ticked, sc.Name)
		out[i] = sc
	}
	return out
}

func (s *server) apiKeys(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderAPIKeys(w, r, sess, &page{Notice: notice(r)}, http.StatusOK, "")
}

func (s *server) renderAPIKeys(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, token string) {
	a, keys, ok := withAccount(s, w, r, sess, s.api.APIKeys)
	if !ok {
		return
	}
	p.Title, p.User, p.Account, p.Tab = "API keys · "+a.Name, &sess.Me, a, "api_keys"
	ticked := r.PostForm["scopes"]
	if token != "" {
		ticked = nil // created: the next key starts from a clean form
	}
	p.Data = apiKeysData{Keys: keys, Scopes: scopesTicked(ticked), Token: token}
	if token != "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	s.render(w, r, status, "api_keys", p)
}

func (s *server) createAPIKey(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	_, token, err := s.api.CreateAPIKey(r.Context(), sess.Token, r.PathValue("id"), name, r.PostForm["scopes"])
	if err != nil {
		if StatusOf(err) == http.StatusNotFound || StatusOf(err) == http.StatusUnauthorized {
			s.fail(w, r, &sess.Me, err)
			return
		}
		p := &page{Form: map[string]string{"name": name}}
		status := formFailure(p, err)
		if status == http.StatusServiceUnavailable {
			s.unavailable(w, r, &sess.Me)
			return
		}
		s.renderAPIKeys(w, r, sess, p, status, "")
		return
	}
	s.renderAPIKeys(w, r, sess, &page{Notice: "The key was created. Copy its token now: it is shown only once."}, http.StatusOK, token)
}

func (s *server) revokeAPIKey(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	if err := s.api.RevokeAPIKey(r.Context(), sess.Token, id, r.PathValue("key")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(id)+"/api_keys?done=key_gone", http.StatusSeeOther)
}

// MFAState is the caller's two-factor state.
type MFAState struct {
	Enabled   bool       `json:"enabled"`
	EnabledAt *time.Time `json:"enabled_at"`
	Pending   bool       `json:"pending"`
}

// MFAState reads whether two-factor authentication is on or pending.
func (c *Client) MFAState(ctx context.Context, token string) (MFAState, error) {
	var st MFAState
	err := c.do(ctx, token, "GET", "/v1/me/mfa", nil, &st)
	return st, err
}
