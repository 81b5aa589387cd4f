package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

type oidcAPI struct {
	*api
	store identity.OIDCStore
}

type oidcClientBody struct {
	ClientID     string     `json:"client_id"`
	AccountID    string     `json:"account_id"`
	Name         string     `json:"name"`
	Public       bool       `json:"public"`
	RedirectURIs []string   `json:"redirect_uris"`
	GrantTypes   []string   `json:"grant_types"`
	Scopes       []string   `json:"scopes"`
	CreatedBy    string     `json:"created_by"`
	CreatedAt    time.Time  `json:"created_at"`
	RevokedAt    *time.Time `json:"revoked_at"`
	// ClientSecret is set only in the answer that creates a confidential
	// client.
	ClientSecret string `json:"client_secret,omitempty"`
}

func oidcClientOut(c identity.OIDCClient, secret string) oidcClientBody {
	var revoked *time.Time
	if c.RevokedAt != nil {
		t := c.RevokedAt.UTC()
		revoked = &t
	}
	return oidcClientBody{c.ID, c.AccountID, c.Name, c.Public, c.RedirectURIs, c.GrantTypes, c.Scopes, c.CreatedBy, c.CreatedAt.UTC(), revoked, secret}
}

func (o *oidcAPI) create(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	var in struct {
		Name         string   `json:"name"`
		RedirectURIs []string `json:"redirect_uris"`
		GrantTypes   []string `json:"grant_types"`
		Scopes       []string `json:"scopes"`
		Public       bool     `json:"public"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		o.fail(w, r, err)
		return
	}
	c, secret, err := identity.RegisterOIDCClient(r.Context(), o.store, p, identity.RegisterOIDCClientInput{
		Name: in.Name, RedirectURIs: in.RedirectURIs, GrantTypes: in.GrantTypes, Scopes: in.Scopes, Public: in.Public,
	})
	if err != nil {
		o.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, oidcClientOut(c, secret))
}

func (o *oidcAPI) list(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	cs, err := identity.ListOIDCClients(r.Context(), o.store, p)
	if err != nil {
		o.fail(w, r, err)
		return
	}
	out := struct {
		OIDCClients []oidcClientBody `json:"oidc_clients"`
	}{make([]oidcClientBody, 0, len(cs))}
	for _, c := range cs {
		out.OIDCClients = append(out.OIDCClients, oidcClientOut(c, ""))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (o *oidcAPI) revoke(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := identity.RevokeOIDCClient(r.Context(), o.store, p, r.PathValue("clientID")); err != nil {
		o.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
