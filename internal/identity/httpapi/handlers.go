package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

// Response bodies. Times are RFC 3339 in UTC.
type (
	userBody struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	meBody struct {
		ID              string     `json:"id"`
		Email           string     `json:"email"`
		DisplayName     string     `json:"display_name"`
		Staff           bool       `json:"staff"`
		CreatedAt       time.Time  `json:"created_at"`
		EmailVerified   bool       `json:"email_verified"`
		EmailVerifiedAt *time.Time `json:"email_verified_at"`
		AvatarMediaID   *string    `json:"avatar_media_id"`
	}
	sessionBody struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	staffRecordBody struct {
		ID          string     `json:"id"`
		Email       string     `json:"email"`
		DisplayName string     `json:"display_name"`
		DisabledAt  *time.Time `json:"disabled_at"`
		VerifiedAt  *time.Time `json:"verified_at"`
		CreatedAt   time.Time  `json:"created_at"`
		// EmailVerified and EmailVerifiedAt name verified_at as the
		// lifecycle's other answers do.
		EmailVerified   bool       `json:"email_verified"`
		EmailVerifiedAt *time.Time `json:"email_verified_at"`
	}
	accountBody struct {
		ID        string        `json:"id"`
		Name      string        `json:"name"`
		Slug      string        `json:"slug"`
		Personal  bool          `json:"personal"`
		Role      identity.Role `json:"role"`
		CreatedAt time.Time     `json:"created_at"`
		UpdatedAt time.Time     `json:"updated_at"`
	}
	membershipBody struct {
		AccountID string        `json:"account_id"`
		UserID    string        `json:"user_id"`
		Email     string        `json:"email"`
		Role      identity.Role `json:"role"`
		CreatedAt time.Time     `json:"created_at"`
	}
	invitationBody struct {
		ID        string        `json:"id"`
		AccountID string        `json:"account_id"`
		Email     string        `json:"email"`
		Role      identity.Role `json:"role"`
		Token     string        `json:"token"`
		ExpiresAt time.Time     `json:"expires_at"`
		CreatedAt time.Time     `json:"created_at"`
	}
)

func accountOut(a identity.Account) accountBody {
	return accountBody{a.ID, a.Name, a.Slug, a.Personal, a.Role, a.CreatedAt.UTC(), a.UpdatedAt.UTC()}
}

func membershipOut(m identity.Membership) membershipBody {
	return membershipBody{m.AccountID, m.UserID, m.Email, m.Role, m.CreatedAt.UTC()}
}

func (a *api) jwks(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=60")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"keys": a.svc.Keys().JWKS()})
}

func (a *api) register(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email       string `json:"email"`
		Password    string `json:"password"`
		DisplayName string `json:"display_name"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	u, err := a.svc.Register(r.Context(), identity.RegisterInput{Email: in.Email, Password: in.Password, DisplayName: in.DisplayName})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/me")
	httpx.WriteJSON(w, http.StatusCreated, userBody{u.ID, u.Email})
}

func (a *api) login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	tok, sess, err := a.svc.Login(r.Context(), in.Email, in.Password)
	if err != nil {
		a.failLogin(w, r, err)
		return
	}
	// Exactly the attributes operations.md fixes: a __Host- cookie has
	// Path=/, Secure and no Domain, or browsers refuse it.
	w.Header().Add("Set-Cookie", SessionCookie+"="+tok+"; Path=/; Secure; HttpOnly; SameSite=Lax")
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, sessionBody{tok, sess.ExpiresAt.UTC()})
}

func (a *api) logout(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.Logout(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Add("Set-Cookie", SessionCookie+"=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax")
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) me(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	httpx.WriteJSON(w, http.StatusOK, meOf(p.User))
}

// meOf is GET /v1/me's body for u.
func meOf(u identity.User) meBody {
	var avatar *string
	if u.AvatarMediaID != "" {
		avatar = &u.AvatarMediaID
	}
	return meBody{u.ID, u.Email, u.DisplayName, u.Staff, u.CreatedAt.UTC(), u.EmailVerifiedAt != nil, u.EmailVerifiedAt, avatar}
}

// updateMe is PATCH /v1/me: {avatar_media_id: id | null}, the field
// required (null removes the avatar).
func (a *api) updateMe(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		AvatarMediaID json.RawMessage `json:"avatar_media_id"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	var media *string
	if len(in.AvatarMediaID) == 0 || json.Unmarshal(in.AvatarMediaID, &media) != nil {
		rule := identity.RuleInvalid
		if len(in.AvatarMediaID) == 0 {
			rule = identity.RuleRequired
		}
		a.fail(w, r, &errs.Error{Code: identity.CodeValidation, Message: "avatar_media_id must be a media id or null",
			Fields: []errs.FieldError{{Field: "avatar_media_id", Code: rule}}})
		return
	}
	id := ""
	if media != nil {
		if *media == "" {
			a.fail(w, r, &errs.Error{Code: identity.CodeValidation, Message: "avatar_media_id must be a media id or null",
				Fields: []errs.FieldError{{Field: "avatar_media_id", Code: identity.RuleInvalid}}})
			return
		}
		id = *media
	}
	u, err := a.svc.SetAvatar(r.Context(), p, id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, meOf(u))
}

func (a *api) operatorMe(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if !p.User.Staff {
		a.fail(w, r, identity.ErrNotStaff)
		return
	}
	type staffUser struct {
		ID    string `json:"id"`
		Email string `json:"email"`
		Staff bool   `json:"staff"`
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]staffUser{"user": {p.User.ID, p.User.Email, true}})
}

func (a *api) searchUsers(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	q := r.URL.Query()
	limit := 0
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			a.fail(w, r, &errs.Error{Code: identity.CodeValidation, Message: "limit must be a whole number from 1 to 50",
				Fields: []errs.FieldError{{Field: "limit", Code: identity.RuleInvalid}}})
			return
		}
		limit = n
	}
	users, err := a.svc.SearchUsers(r.Context(), p, q.Get("query"), limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]staffRecordBody, len(users))
	for i, u := range users {
		out[i] = staffRecordBody{u.ID, u.Email, u.DisplayName, u.DisabledAt, u.VerifiedAt, u.CreatedAt, u.VerifiedAt != nil, u.VerifiedAt}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"users": out})
}

func (a *api) listAccounts(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	page, err := identity.ParsePage(r.URL.Query().Get("cursor"), r.URL.Query().Get("limit"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	accounts, next, err := a.svc.ListAccounts(r.Context(), p, page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// identity.md fixes this body as an array, so the next page is named
	// by a Link header (RFC 8288) rather than a next_cursor field.
	if next != nil {
		w.Header().Set("Link", fmt.Sprintf(`</v1/accounts?cursor=%s&limit=%d>; rel="next"`, next.Encode(), page.Limit))
	}
	out := make([]accountBody, len(accounts))
	for i, acc := range accounts {
		out[i] = accountOut(acc)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (a *api) createAccount(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Name string `json:"name"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	acc, err := a.svc.CreateAccount(r.Context(), p, in.Name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/accounts/"+acc.ID)
	httpx.WriteJSON(w, http.StatusCreated, accountOut(acc))
}

func (a *api) getAccount(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if p.APIKey != nil {
		httpx.WriteJSON(w, http.StatusOK, keyAccountBody{accountOut(*p.Account), p.APIKey.Scopes})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, accountOut(*p.Account))
}

func (a *api) renameAccount(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Name string `json:"name"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	acc, err := a.svc.RenameAccount(r.Context(), p, in.Name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, accountOut(acc))
}

func (a *api) deleteAccount(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.DeleteAccount(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) listMembers(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	page, err := identity.ParsePage(r.URL.Query().Get("cursor"), r.URL.Query().Get("limit"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	members, next, err := a.svc.ListMembers(r.Context(), p, page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeMemberPage(w, members, next)
}

func (a *api) changeRole(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Role identity.Role `json:"role"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	m, err := a.svc.ChangeRole(r.Context(), p, r.PathValue("userID"), in.Role)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, membershipOut(m))
}

func (a *api) removeMember(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.RemoveMember(r.Context(), p, r.PathValue("userID")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) invite(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Email string        `json:"email"`
		Role  identity.Role `json:"role"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	inv, err := a.svc.Invite(r.Context(), p, in.Email, in.Role)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, invitationBody{inv.ID, inv.AccountID, inv.Email, inv.Role, inv.Token, inv.ExpiresAt.UTC(), inv.CreatedAt.UTC()})
}

func (a *api) acceptInvitation(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Token string `json:"token"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	m, err := a.svc.AcceptInvitation(r.Context(), p, in.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, membershipOut(m))
}
