package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

// oidcConsentBody is an application the caller allowed.
type oidcConsentBody struct {
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name"`
	Scopes     []string  `json:"scopes"`
	GrantedAt  time.Time `json:"granted_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func (o *oidcAPI) listConsents(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	ks, err := identity.ListOIDCConsents(r.Context(), o.store, p)
	if err != nil {
		o.fail(w, r, err)
		return
	}
	out := struct {
		OIDCConsents []oidcConsentBody `json:"oidc_consents"`
	}{make([]oidcConsentBody, 0, len(ks))}
	for _, k := range ks {
		out.OIDCConsents = append(out.OIDCConsents, oidcConsentBody{k.ClientID, k.ClientName, k.Scopes, k.GrantedAt.UTC(), k.UpdatedAt.UTC()})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (o *oidcAPI) withdrawConsent(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	if err := identity.WithdrawOIDCConsent(r.Context(), o.store, p, r.PathValue("clientID")); err != nil {
		o.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
