package parlor

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// The settings page's sign-in parts: changing the password while signed
// in, and the sessions of the user with signing the others out.

// SessionInfo is one of the user's open sessions (never its token).
type SessionInfo struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Current is the session of this browser.
	Current bool `json:"current"`
}

// Sessions lists the signed-in user's open sessions.
func (c *Client) Sessions(ctx context.Context, token string) ([]SessionInfo, error) {
	var out struct {
		Sessions []SessionInfo `json:"sessions"`
	}
	err := c.do(ctx, token, "GET", "/v1/me/sessions", nil, &out)
	return out.Sessions, err
}

// EndOtherSessions ends every session of the user but token's.
func (c *Client) EndOtherSessions(ctx context.Context, token string) error {
	return c.do(ctx, token, "DELETE", "/v1/me/sessions", nil, nil)
}

// EndSession ends one of the user's sessions by its id.
func (c *Client) EndSession(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/me/sessions/"+url.PathEscape(id), nil, nil)
}

// ChangePassword sets a new password, proven by the current one; the
// other sessions end, this one stays.
func (c *Client) ChangePassword(ctx context.Context, token, current, next string) error {
	return c.do(ctx, token, "POST", "/v1/me/password",
		map[string]string{"current_password": current, "new_password": next}, nil)
}

func (s *server) changePassword(w http.ResponseWriter, r *http.Request, sess *session) {
	p := &page{Title: "Settings", User: &sess.Me}
	err := s.api.ChangePassword(r.Context(), sess.Token, r.PostFormValue("current_password"), r.PostFormValue("new_password"))
	if err != nil {
		status := formFailure(p, err)
		switch {
		case CodeOf(err) == "invalid_credentials":
			p.Error = ""
			p.Errors["current_password"] = "The current password is wrong."
		case CodeOf(err) == "account_locked":
			p.Error = lockedWords(err)
		case StatusOf(err) == http.StatusUnauthorized:
			s.fail(w, r, &sess.Me, err)
			return
		}
		s.renderSettings(w, r, status, sess, p)
		return
	}
	http.Redirect(w, r, "/app/settings?done=password", http.StatusSeeOther)
}

// endOtherSessions signs out every session but this browser's.
func (s *server) endOtherSessions(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.EndOtherSessions(r.Context(), sess.Token); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/settings?done=others", http.StatusSeeOther)
}

// endSession signs out one other session of the user.
func (s *server) endSession(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.EndSession(r.Context(), sess.Token, r.PathValue("session")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/app/settings?done=session-ended", http.StatusSeeOther)
}

// signOutEverywhere ends every other session, then this one.
func (s *server) signOutEverywhere(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.EndOtherSessions(r.Context(), sess.Token); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	if err := s.api.SignOut(r.Context(), sess.Token); err != nil && StatusOf(err) != http.StatusUnauthorized {
		s.fail(w, r, &sess.Me, err)
		return
	}
	clearCookie(w)
	http.Redirect(w, r, "/signin?done=everywhere", http.StatusSeeOther)
}
