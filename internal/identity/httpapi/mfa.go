package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

type (
	enrolmentBody struct {
		Secret        string   `json:"secret"`
		OTPAuthURL    string   `json:"otpauth_url"`
		RecoveryCodes []string `json:"recovery_codes"`
	}
	mfaStatusBody struct {
		Enabled   bool      `json:"enabled"`
		EnabledAt time.Time `json:"enabled_at"`
	}
	recoveryCodesBody struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	// mfaRequiredBody is the problem answering a right password of a user
	// with MFA: the challenge for POST /v1/session/mfa rides along.
	mfaRequiredBody struct {
		httpx.Problem
		Challenge          string    `json:"challenge"`
		ChallengeExpiresAt time.Time `json:"challenge_expires_at"`
	}
)

// failLogin answers a sign-in's error; mfa_required carries its challenge.
func (a *api) failLogin(w http.ResponseWriter, r *http.Request, err error) {
	var mr *identity.MFARequiredError
	if !errors.As(err, &mr) {
		a.fail(w, r, err)
		return
	}
	body := mfaRequiredBody{
		Problem: httpx.Problem{
			Type: "about:blank", Status: http.StatusUnauthorized, Title: http.StatusText(http.StatusUnauthorized),
			Detail: "a second factor is required: send a code with this challenge to POST /v1/session/mfa",
			Code:   identity.CodeMFARequired, TraceID: httpx.TraceFrom(r.Context()).TraceID,
		},
		Challenge: mr.Challenge, ChallengeExpiresAt: mr.ExpiresAt.UTC(),
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(body); err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="identity"`)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(buf.Bytes())
}

// startSession answers a new session as a password sign-in does.
func startSession(w http.ResponseWriter, tok string, sess identity.Session) {
	// Exactly the attributes operations.md fixes: a __Host- cookie has
	// Path=/, Secure and no Domain, or browsers refuse it.
	w.Header().Add("Set-Cookie", SessionCookie+"="+tok+"; Path=/; Secure; HttpOnly; SameSite=Lax")
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, sessionBody{tok, sess.ExpiresAt.UTC()})
}

func (a *api) loginMFA(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Challenge string `json:"challenge"`
		Code      string `json:"code"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	tok, sess, err := a.svc.LoginMFA(r.Context(), in.Challenge, in.Code)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	startSession(w, tok, sess)
}

func (a *api) enrolTOTP(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Password string `json:"password"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	en, err := a.svc.EnrolTOTP(r.Context(), p, in.Password)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, enrolmentBody{en.Secret, en.URL, en.RecoveryCodes})
}

// codeRequest is the body of every route proven by a second factor.
type codeRequest struct {
	Code string `json:"code"`
}

func (a *api) confirmTOTP(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in codeRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	at, err := a.svc.ConfirmTOTP(r.Context(), p, in.Code)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, mfaStatusBody{true, at.UTC()})
}

func (a *api) disableTOTP(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in codeRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.DisableTOTP(r.Context(), p, in.Code); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) regenerateRecoveryCodes(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in codeRequest
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	codes, err := a.svc.RegenerateRecoveryCodes(r.Context(), p, in.Code)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, recoveryCodesBody{codes})
}

// mfaStatus answers the caller's two-factor state, so a page shows it
// and offers only the next step.
func (a *api) mfaStatus(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	st, err := a.svc.MFAStatus(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var at *time.Time
	if st.EnabledAt != nil {
		t := st.EnabledAt.UTC()
		at = &t
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Enabled   bool       `json:"enabled"`
		EnabledAt *time.Time `json:"enabled_at"`
		Pending   bool       `json:"pending"`
	}{st.Enabled, at, st.Pending})
}
