package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

// userStateBody is a user as the lifecycle routes answer it.
type userStateBody struct {
	ID              string     `json:"id"`
	Email           string     `json:"email"`
	DisplayName     string     `json:"display_name"`
	Staff           bool       `json:"staff"`
	EmailVerified   bool       `json:"email_verified"`
	EmailVerifiedAt *time.Time `json:"email_verified_at"`
	CreatedAt       time.Time  `json:"created_at"`
}

func userStateOut(u identity.User) userStateBody {
	return userStateBody{u.ID, u.Email, u.DisplayName, u.Staff, u.EmailVerifiedAt != nil, u.EmailVerifiedAt, u.CreatedAt.UTC()}
}

// accepted is the one answer of the requests that must not tell whether
// an address is registered.
var accepted = map[string]string{"status": "accepted"}

func (a *api) verifyEmail(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	u, err := a.svc.VerifyEmail(r.Context(), in.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"user": userStateOut(u)})
}

func (a *api) resendVerification(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.ResendVerification(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, accepted)
}

func (a *api) requestPasswordReset(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email string `json:"email"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.RequestPasswordReset(r.Context(), in.Email); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, accepted)
}

func (a *api) confirmPasswordReset(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token    string `json:"token"`
		Password string `json:"password"`
		Code     string `json:"code"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.ConfirmPasswordReset(r.Context(), in.Token, in.Password, in.Code); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "password_reset"})
}

func (a *api) requestEmailChange(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.RequestEmailChange(r.Context(), p, in.Email, in.Password); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, accepted)
}

func (a *api) confirmEmailChange(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	u, err := a.svc.ConfirmEmailChange(r.Context(), in.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"user": userStateOut(u)})
}
