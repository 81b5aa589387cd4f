package parlor

import (
	"net/http"
	"strings"
)

// The credential lifecycle's pages: the landing pages of emailed links
// (/verify, /reset, /email/confirm), the reset request, and the account
// settings (address change, a new verification link).

// tokenWords says what a refused one-time link means.
func tokenWords(p *page, err error, what string) {
	switch CodeOf(err) {
	case "not_found":
		p.Error = "This " + what + " link is not valid. Check that it was copied whole, or ask for a new one."
	case "token_expired":
		p.Error = "This " + what + " link has expired. Ask for a new one."
	case "token_used":
		p.Error = "This " + what + " link has already been used."
	}
}

// linkToken is the token of an emailed link's page: the query's when
// the link is opened, the form's when its button is pressed. Without
// one the page says so (400).
func (s *server) linkToken(w http.ResponseWriter, r *http.Request, p *page, name string) (string, bool) {
	token := strings.TrimSpace(r.URL.Query().Get("token"))
	if r.Method == http.MethodPost {
		token = strings.TrimSpace(r.PostFormValue("token"))
	}
	if token == "" {
		p.Error = "This link has no token in it. Open the link from the email again."
		s.render(w, r, http.StatusBadRequest, name, p)
		return "", false
	}
	return token, true
}

// verifyForm is the verification link's page: a button whose POST
// (verify) spends the token. Opening the link spends nothing, so a mail
// scanner or a browser that fetches it ahead of the user leaves it
// working.
func (s *server) verifyForm(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Verify your email address"}
	if sess, err := s.currentSession(w, r); err == nil && sess != nil {
		p.User = &sess.Me
	}
	if token, ok := s.linkToken(w, r, p, "verify"); ok {
		p.Form = map[string]string{"token": token}
		s.render(w, r, http.StatusOK, "verify", p)
	}
}

// verify spends the token the verification page's button posts.
func (s *server) verify(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Verify your email address"}
	if sess, err := s.currentSession(w, r); err == nil && sess != nil {
		p.User = &sess.Me
	}
	token, ok := s.linkToken(w, r, p, "verify")
	if !ok {
		return
	}
	if err := s.api.VerifyEmail(r.Context(), token); err != nil {
		status := formFailure(p, err)
		tokenWords(p, err, "verification")
		s.render(w, r, status, "verify", p)
		return
	}
	if p.User != nil {
		p.User.EmailVerified = true
	}
	p.Notice = "Your email address is verified."
	p.Form = map[string]string{"next": takeReturnTo(w, r)}
	s.render(w, r, http.StatusOK, "verify", p)
}

func (s *server) resendVerification(w http.ResponseWriter, r *http.Request, sess *session) {
	p := &page{Title: "Settings", User: &sess.Me}
	if err := s.api.ResendVerification(r.Context(), sess.Token); err != nil {
		status := formFailure(p, err)
		switch CodeOf(err) {
		case "rate_limited":
			p.Error = "A link was sent less than a minute ago. Check your mailbox, or try again in a minute."
		case "conflict":
			p.Error = "Your email address is already verified."
		}
		s.renderSettings(w, r, status, sess, p)
		return
	}
	http.Redirect(w, r, "/app/settings?done=verification", http.StatusSeeOther)
}

// resetForm is the request form, or with ?token= the new-password form.
func (s *server) resetForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	p := &page{Title: "Reset your password", Form: map[string]string{"token": token}}
	if r.URL.Query().Get("done") == "sent" {
		p.Notice = "If an account uses that address, we have sent it a link to reset the password. The link works for an hour."
	}
	s.render(w, r, http.StatusOK, "reset", p)
}

func (s *server) reset(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		email := strings.TrimSpace(r.PostFormValue("email"))
		p := &page{Title: "Reset your password", Form: map[string]string{"email": email}}
		if err := s.api.RequestPasswordReset(r.Context(), email); err != nil {
			s.render(w, r, formFailure(p, err), "reset", p)
			return
		}
		http.Redirect(w, r, "/reset?done=sent", http.StatusSeeOther)
		return
	}
	code := strings.TrimSpace(r.PostFormValue("code"))
	p := &page{Title: "Reset your password", Form: map[string]string{"token": token}}
	if code != "" {
		p.Form["mfa"] = "on"
	}
	if err := s.api.ConfirmPasswordReset(r.Context(), token, r.PostFormValue("password"), code); err != nil {
		status := formFailure(p, err)
		tokenWords(p, err, "reset")
		// A user with two-step sign-in proves the second factor too, or
		// the reset link alone would take their account.
		switch CodeOf(err) {
		case "mfa_required":
			status, p.Error, p.Form["mfa"] = http.StatusUnprocessableEntity, "", "on"
			p.Errors["code"] = "Your account uses two-step sign-in: enter a code from your authenticator app, or a recovery code, with your new password."
		case "invalid_code":
			status, p.Error, p.Form["mfa"] = http.StatusUnprocessableEntity, "", "on"
			p.Errors["code"] = "That code is wrong or was already used. Wait for the next code, or use a recovery code."
		}
		s.render(w, r, status, "reset", p)
		return
	}
	// Every session ended with the reset, this browser's included.
	clearCookie(w)
	http.Redirect(w, r, "/signin?done=reset", http.StatusSeeOther)
}

// confirmEmailForm is the address change's link page: a button whose
// POST (confirmEmail) spends the token; opening the link spends nothing.
func (s *server) confirmEmailForm(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Confirm your new address"}
	if token, ok := s.linkToken(w, r, p, "email_confirm"); ok {
		p.Form = map[string]string{"token": token}
		s.render(w, r, http.StatusOK, "email_confirm", p)
	}
}

// confirmEmail spends the token the confirmation page's button posts.
func (s *server) confirmEmail(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Confirm your new address"}
	token, ok := s.linkToken(w, r, p, "email_confirm")
	if !ok {
		return
	}
	if err := s.api.ConfirmEmailChange(r.Context(), token); err != nil {
		status := formFailure(p, err)
		tokenWords(p, err, "confirmation")
		if CodeOf(err) == "conflict" {
			p.Error = "Another account took this address meanwhile, so your address was not changed."
		}
		s.render(w, r, status, "email_confirm", p)
		return
	}
	// Every session ended with the change, this browser's included.
	clearCookie(w)
	p.Notice = "Your email address has changed. Sign in with the new address."
	s.render(w, r, http.StatusOK, "email_confirm", p)
}

var settingsNotices = map[string]string{
	"verification":   "We have sent you a new verification link.",
	"email":          "If the new address can be used, we have sent it a confirmation link. Your address changes when you open it.",
	"password":       "Your password was changed. Every other session of your account has ended.",
	"others":         "Every other session of your account has ended; this browser stays signed in.",
	"session-ended":  "That session has ended: its browser or device is signed out.",
	"disconnected":   "The application is disconnected: it can no longer act for you, and it will ask again the next time you sign in to it.",
	"push":           "This browser will show your notifications.",
	"push-removed":   "That device no longer gets notifications.",
	"avatar":         "Your new avatar is shown beside your name.",
	"avatar-removed": "Your avatar is removed.",
}

func (s *server) settings(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderSettings(w, r, http.StatusOK, sess, &page{Title: "Settings", User: &sess.Me,
		Notice: settingsNotices[r.URL.Query().Get("done")]})
}

func (s *server) changeEmail(w http.ResponseWriter, r *http.Request, sess *session) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	p := &page{Title: "Settings", User: &sess.Me, Form: map[string]string{"email": email}}
	if err := s.api.RequestEmailChange(r.Context(), sess.Token, email, r.PostFormValue("password")); err != nil {
		status := formFailure(p, err)
		if CodeOf(err) == "invalid_credentials" {
			p.Error = ""
			p.Errors["password"] = "The password is wrong."
		}
		s.renderSettings(w, r, status, sess, p)
		return
	}
	http.Redirect(w, r, "/app/settings?done=email", http.StatusSeeOther)
}
