package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

type (
	sessionInfoBody struct {
		ID         string    `json:"id"`
		CreatedAt  time.Time `json:"created_at"`
		LastSeenAt time.Time `json:"last_seen_at"`
		ExpiresAt  time.Time `json:"expires_at"`
		Current    bool      `json:"current"`
	}
	// pendingInvitationBody is an invitation as listed: never its token,
	// which exists only in the answer that issues it.
	pendingInvitationBody struct {
		ID        string        `json:"id"`
		AccountID string        `json:"account_id"`
		Email     string        `json:"email"`
		Role      identity.Role `json:"role"`
		ExpiresAt time.Time     `json:"expires_at"`
		CreatedAt time.Time     `json:"created_at"`
	}
)

func (a *api) listSessions(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	sessions, err := a.svc.ListSessions(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]sessionInfoBody, len(sessions))
	for i, s := range sessions {
		out[i] = sessionInfoBody{s.ID, s.CreatedAt.UTC(), s.LastSeenAt.UTC(), s.ExpiresAt.UTC(), s.ID == p.SessionID}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func (a *api) endOtherSessions(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.EndOtherSessions(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) endSession(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.EndSession(r.Context(), p, r.PathValue("sessionID")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) changePassword(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.ChangePassword(r.Context(), p, in.CurrentPassword, in.NewPassword); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) listInvitations(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	page, err := identity.ParsePage(r.URL.Query().Get("cursor"), r.URL.Query().Get("limit"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	invs, next, err := a.svc.ListInvitations(r.Context(), p, page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := struct {
		Invitations []pendingInvitationBody `json:"invitations"`
		NextCursor  *string                 `json:"next_cursor"`
	}{Invitations: make([]pendingInvitationBody, len(invs))}
	for i, inv := range invs {
		out.Invitations[i] = pendingInvitationBody{inv.ID, inv.AccountID, inv.Email, inv.Role, inv.ExpiresAt.UTC(), inv.CreatedAt.UTC()}
	}
	if next != nil {
		c := next.Encode()
		out.NextCursor = &c
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (a *api) revokeInvitation(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.RevokeInvitation(r.Context(), p, r.PathValue("invitationID")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) resendInvitation(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	inv, err := a.svc.ResendInvitation(r.Context(), p, r.PathValue("invitationID"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, invitationBody{inv.ID, inv.AccountID, inv.Email, inv.Role, inv.Token, inv.ExpiresAt.UTC(), inv.CreatedAt.UTC()})
}

func (a *api) previewInvitation(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	v, err := a.svc.PreviewInvitation(r.Context(), in.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"invitation": map[string]any{
		"account_name": v.AccountName, "role": v.Role, "email": v.Email, "inviter_email": v.InviterEmail, "expires_at": v.ExpiresAt.UTC()}})
}

func (a *api) declineInvitation(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Token string `json:"token"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.svc.DeclineInvitation(r.Context(), p, in.Token); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
