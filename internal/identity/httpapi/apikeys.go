package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

// keyRoutes are the only identity routes an API key may call, by mux
// pattern. Reading its own account is how every upstream checks a key
// (as it checks a person's membership), so any key of the account may;
// the answer's scopes tell the upstream what the key may do there.
var keyRoutes = map[string]bool{
	"GET /v1/accounts/{accountID}": true,
}

// keyAllowed decides an API key on an account route: another account is
// not visible (404, as for a non-member); a route outside keyRoutes is
// 403 insufficient_scope.
func keyAllowed(r *http.Request, p identity.Principal) error {
	if p.Account == nil {
		return identity.ErrAccountNotFound
	}
	if !keyRoutes[r.Pattern] {
		return identity.ErrInsufficientScope
	}
	return nil
}

type (
	apiKeyBody struct {
		ID         string     `json:"id"`
		Name       string     `json:"name"`
		AccountID  string     `json:"account_id"`
		Scopes     []string   `json:"scopes"`
		CreatedBy  string     `json:"created_by"`
		CreatedAt  time.Time  `json:"created_at"`
		ExpiresAt  *time.Time `json:"expires_at"`
		LastUsedAt *time.Time `json:"last_used_at"`
	}
	// keyAccountBody is an account as an API key reads it.
	keyAccountBody struct {
		accountBody
		Scopes []string `json:"scopes"`
	}
)

func apiKeyOut(k identity.APIKey) apiKeyBody {
	return apiKeyBody{k.ID, k.Name, k.AccountID, k.Scopes, k.CreatedBy, k.CreatedAt.UTC(), k.ExpiresAt, k.LastUsedAt}
}

func (a *api) createAPIKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Name      string     `json:"name"`
		Scopes    []string   `json:"scopes"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	k, err := a.svc.CreateAPIKey(r.Context(), p, identity.CreateAPIKeyInput{Name: in.Name, Scopes: in.Scopes, ExpiresAt: in.ExpiresAt})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeNewKey(w, k, "/v1/accounts/"+k.AccountID+"/api_keys/"+k.ID)
}

// writeNewKey answers a created key with its token, shown only here.
func writeNewKey(w http.ResponseWriter, k identity.APIKey, location string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", location)
	httpx.WriteJSON(w, http.StatusCreated, struct {
		APIKey apiKeyBody `json:"api_key"`
		Token  string     `json:"token"`
	}{apiKeyOut(k), k.Token})
}

// writeKeys answers a list of keys, never their tokens.
func writeKeys(w http.ResponseWriter, keys []identity.APIKey) {
	out := struct {
		APIKeys []apiKeyBody `json:"api_keys"`
	}{make([]apiKeyBody, len(keys))}
	for i, k := range keys {
		out.APIKeys[i] = apiKeyOut(k)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (a *api) listAPIKeys(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	keys, err := a.svc.ListAPIKeys(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeKeys(w, keys)
}

func (a *api) revokeAPIKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.RevokeAPIKey(r.Context(), p, r.PathValue("keyID")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// createStaffAPIKey issues a releases:publish key for a release pipeline
// (licensing.md section 4): staff only, in the company's own account,
// whose admin the staff member must be. The token is in this answer only.
func (a *api) createStaffAPIKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if !p.User.Staff {
		a.fail(w, r, identity.ErrNotStaff)
		return
	}
	var in struct {
		Name      string     `json:"name"`
		AccountID string     `json:"account_id"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	k, err := a.svc.CreateStaffAPIKey(r.Context(), p, identity.StaffAPIKeyInput{AccountID: in.AccountID, Name: in.Name, ExpiresAt: in.ExpiresAt})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeNewKey(w, k, "/v1/operator/api_keys/"+k.ID)
}

func (a *api) listStaffAPIKeys(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	keys, err := a.svc.StaffAPIKeys(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeKeys(w, keys)
}

func (a *api) revokeStaffAPIKey(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := a.svc.RevokeStaffAPIKey(r.Context(), p, r.PathValue("keyID")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// publisher answers box's question before it publishes a release: is
// the bearer a staff member's session or a live releases:publish key? It
// is the one identity route a publishing key may call; GET
// /v1/operator/me and every other staff route refuse any key, so such a
// key can do nothing but publish.
func (a *api) publisher(w http.ResponseWriter, r *http.Request) {
	tok, _ := token(r)
	pub, err := a.svc.Publisher(r.Context(), tok)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var keyID *string
	if pub.APIKeyID != "" {
		keyID = &pub.APIKeyID
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		UserID   string  `json:"user_id"`
		APIKeyID *string `json:"api_key_id"`
	}{pub.UserID, keyID})
}
