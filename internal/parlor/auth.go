package parlor

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// notices are the confirmations a redirect may ask a page to show, by
// key, so no text from the query string ever reaches a page.
var notices = map[string]string{
	"created":     "The team account was created.",
	"deactivated": "The installation is deactivated: it no longer counts toward the limit.",
	"renamed":     "The account was renamed.",
	"deleted":     "The account was deleted.",
	"role":        "The member's role was changed.",
	"removed":     "The member was removed.",
	"joined":      "You joined the account.",
	"invited":     "The invitation was emailed. It is listed under Pending invitations until it is accepted.",
	"resent":      "The invitation was emailed again with a new link; the old link no longer works.",
	"inv_gone":    "The invitation was revoked; its link no longer works.",
	"everywhere":  "You are signed out everywhere: every session of your account has ended.",
	"reset":       "Your password is reset and every session has ended. Sign in with the new password.",
	"claimed":     "The kit is yours: it is listed below.",
	"approved":    "The release was approved.",
	"granted":     "The entitlement was granted.",
	"revoked":     "The entitlement was revoked.",
	"published":   "The release was published.",
	"mfa_on":      "Two-factor authentication is on.",
	"mfa_off":     "Two-factor authentication is off.",
	"key_gone":    "The API key was revoked; it stopped working at once.",

	"publish_key_gone": "The publishing key was revoked; it stopped working at once.",

	"project-published": "The project was published.",
	"project-saved":     "The project was saved.",
	"project-deleted":   "The project was deleted; its address is free again.",
	"starred":           "You starred this project.",
	"unstarred":         "You no longer star this project.",

	"credential-added":   "The provider credential was added. Its key is sealed and never shown again.",
	"credential-removed": "The provider credential was removed.",
	"alias-saved":        "The alias was saved.",
	"alias-removed":      "The alias was removed.",
	"budget-set":         "The monthly budget was set.",
}

func notice(r *http.Request) string { return notices[r.URL.Query().Get("done")] }

func (s *server) landing(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	if sess != nil {
		http.Redirect(w, r, "/app", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "landing", &page{Title: "Welcome"})
}

func (s *server) signupForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signup", &page{Title: "Create your account",
		Form: map[string]string{"next": r.URL.Query().Get("next"), "email": r.URL.Query().Get("email")}})
}

// signup registers the user and signs them in at once, so the next page
// is their accounts.
func (s *server) signup(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	password := r.PostFormValue("password")
	next := r.PostFormValue("next")
	p := &page{Title: "Create your account", Form: map[string]string{"email": email, "next": next}}
	if err := s.api.Register(r.Context(), email, password); err != nil {
		status := formFailure(p, err)
		if CodeOf(err) == "conflict" {
			p.Error = "This address cannot be registered. If you already have an account, sign in instead."
		}
		s.render(w, r, status, "signup", p)
		return
	}
	sess, err := s.api.SignIn(r.Context(), email, password)
	if err != nil {
		s.render(w, r, formFailure(p, err), "signup", p)
		return
	}
	setCookie(w, sess.Token, sess.ExpiresAt)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

func (s *server) signinForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", &page{Title: "Sign in", Notice: notice(r),
		Form: map[string]string{"next": r.URL.Query().Get("next")}})
}

func (s *server) signin(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	next := r.PostFormValue("next")
	p := &page{Title: "Sign in", Form: map[string]string{"email": email, "next": next}}
	sess, err := s.api.SignIn(r.Context(), email, r.PostFormValue("password"))
	if CodeOf(err) == "mfa_required" {
		s.renderMFAStep(w, r, http.StatusOK, &page{Title: "Two-factor authentication"}, challengeOf(err), next)
		return
	}
	if err != nil {
		status := formFailure(p, err)
		switch {
		case StatusOf(err) == http.StatusUnauthorized:
			// The same words for an unknown address and a wrong password,
			// as identity answers them.
			p.Error = "The email address or the password is wrong."
		case CodeOf(err) == "account_locked":
			p.Error = lockedWords(err)
			p.Form["locked"] = "yes"
		}
		s.render(w, r, status, "signin", p)
		return
	}
	setCookie(w, sess.Token, sess.ExpiresAt)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// signout ends the session at identity and drops the cookie. When the
// platform cannot be reached the cookie is kept, so the user can retry
// and really end the session rather than only forget it here.
func (s *server) signout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if err := s.api.SignOut(r.Context(), c.Value); err != nil && StatusOf(err) != http.StatusUnauthorized {
			s.fail(w, r, nil, err)
			return
		}
	}
	clearCookie(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// invitationData is the invitation page's content.
type invitationData struct {
	Token string
	// Here is this page's own path, for signing in and coming back.
	Here string
	// Invitation is what the token offers; nil when it offers nothing
	// (Refusal says why) or the link carried no token.
	Invitation *InvitationPreview
	Refusal    string
	// SignUp is the sign-up link, the invited address prefilled.
	SignUp string
}

// previewInvitation fills d's Invitation, or its Refusal in words. A
// platform that does not answer leaves both empty: the page still offers
// to sign in and accept, which say so themselves when it answers.
func (s *server) previewInvitation(r *http.Request, d *invitationData) {
	if d.Token == "" {
		return
	}
	v, err := s.api.PreviewInvitation(r.Context(), d.Token)
	switch {
	case err == nil:
		d.Invitation = &v
		d.SignUp = "/signup?" + url.Values{"next": {d.Here}, "email": {v.Email}}.Encode()
	case StatusOf(err) == http.StatusNotFound:
		d.Refusal = "This invitation is not valid: it was withdrawn or replaced by a newer one, or the link was not copied whole."
	case CodeOf(err) == "invitation_expired":
		d.Refusal = "This invitation has expired. Ask the account's admin for a new one."
	case CodeOf(err) == "invitation_used":
		d.Refusal = "This invitation has already been used."
	case Unavailable(err) || StatusOf(err) >= 500:
		s.log.WarnContext(r.Context(), "invitation preview unavailable", "err", err.Error())
	default:
		d.Refusal = sentence(err)
	}
}

func (s *server) invitationForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	here := "/invitations/accept?token=" + url.QueryEscape(token)
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	d := invitationData{Token: token, Here: here, SignUp: "/signup?next=" + url.QueryEscape(here)}
	s.previewInvitation(r, &d)
	p := &page{Title: "Accept an invitation", Data: d}
	if sess != nil {
		p.User = &sess.Me
	}
	if token != "" {
		// Verifying the address takes a mailed link, which knows nothing
		// of this page: the way back is kept for the verify page.
		setReturnTo(w, here)
	}
	if token == "" {
		p.Errors = map[string]string{"token": "This link has no invitation in it. Paste the invitation token below."}
	}
	s.render(w, r, http.StatusOK, "invitation", p)
}

func (s *server) acceptInvitation(w http.ResponseWriter, r *http.Request, sess *session) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	m, err := s.api.AcceptInvitation(r.Context(), sess.Token, token)
	if err != nil {
		d := invitationData{Token: token, Here: "/invitations/accept?token=" + url.QueryEscape(token)}
		s.previewInvitation(r, &d)
		p := &page{Title: "Accept an invitation", User: &sess.Me, Data: d}
		status := formFailure(p, err)
		switch {
		case StatusOf(err) == http.StatusNotFound:
			p.Error = "This invitation is not valid. Check that the link was copied whole."
		case StatusOf(err) == http.StatusConflict:
			p.Error = "You are already a member of this account."
		case CodeOf(err) == "email_not_verified":
			p.Error = "Verify your email address first: open the link we emailed to " + sess.Me.Email + ", then come back here."
		case CodeOf(err) == "invitation_email_mismatch":
			p.Error = "This invitation was sent to another address. Sign in with the address it was sent to."
		}
		s.render(w, r, status, "invitation", p)
		return
	}
	http.Redirect(w, r, "/app/accounts/"+url.PathEscape(m.AccountID)+"?done=joined", http.StatusSeeOther)
}

// lockedWords says until when a locked sign-in stays locked, from the
// API's Retry-After, and that a password reset unlocks it at once.
func lockedWords(err error) string {
	var ae *APIError
	until := ""
	if errors.As(err, &ae) && !ae.RetryAfter.IsZero() {
		until = " until " + ae.RetryAfter.UTC().Format("15:04 UTC")
		if ae.RetryAfter.UTC().YearDay() != time.Now().UTC().YearDay() {
			until = " until " + ae.RetryAfter.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	return "Too many failed sign-ins: this user is locked" + until + ". Resetting the password unlocks it now."
}

// returnToCookie keeps, for a day, the page to come back to after a
// step that leaves the site (verifying the address from the mailbox).
const returnToCookie = "__Host-return-to"

func setReturnTo(w http.ResponseWriter, path string) {
	http.SetCookie(w, &http.Cookie{Name: returnToCookie, Value: url.QueryEscape(path), Path: "/", MaxAge: 86400,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// takeReturnTo reads and clears the page to come back to; only a path
// of this site is ever returned ("" without one).
func takeReturnTo(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(returnToCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: returnToCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	path, err := url.QueryUnescape(c.Value)
	if err != nil {
		return ""
	}
	if safe := localPath(path); safe == path {
		return path
	}
	return ""
}
