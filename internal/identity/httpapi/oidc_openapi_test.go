package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
)

// exerciseOIDCClients drives every declared response of the client
// registration routes for TestOpenAPIConformance (the 500s come from its
// closed-database pass over oaRoutes). acct is a team the owner owns and
// the member belongs to; other is an account the member is not in.
func exerciseOIDCClients(t *testing.T, c *openapitest.Client, db *sqldb.DB, ownerID, acct, other, ownerTok, memberTok, big string, plain openapitest.Option) {
	t.Helper()
	base := acct + "/oidc_clients"
	body := `{"name":"Shop","redirect_uris":["https://shop.example/cb"],"grant_types":["authorization_code","refresh_token"],"scopes":["openid","email"]}`
	var created struct {
		ClientID string `json:"client_id"`
	}
	c.JSON("POST", base, body, 201, &created, openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "oidc-1"))
	c.Do("POST", base, `{"name":"Public","redirect_uris":["http://127.0.0.1:8080/cb"],"public":true}`, 201, openapitest.Bearer(ownerTok))
	c.Code("POST", base, `{"name":"x"`, 400, "malformed_json", openapitest.Bearer(ownerTok))
	c.Code("POST", base, body, 401, "unauthorized")
	c.Code("POST", base, body, 403, "forbidden", openapitest.Bearer(memberTok))
	c.Code("POST", other+"/oidc_clients", body, 404, "not_found", openapitest.Bearer(memberTok))
	claimKey(t, db, "user:"+ownerID, "oidc-busy", "POST", base, body)
	c.Code("POST", base, body, 409, "idempotency_key_in_progress", openapitest.Bearer(ownerTok), openapitest.Header("Idempotency-Key", "oidc-busy"))
	c.Code("POST", base, big, 413, "body_too_large", openapitest.Bearer(ownerTok))
	c.Code("POST", base, body, 415, "unsupported_media_type", openapitest.Bearer(ownerTok), plain)
	c.Code("POST", base, `{"name":"x","redirect_uris":["http://shop.example/cb"]}`, 422, "validation_failed", openapitest.Bearer(ownerTok))

	c.Do("GET", base, "", 200, openapitest.Bearer(ownerTok))
	c.Code("GET", base, "", 401, "unauthorized")
	c.Code("GET", base, "", 403, "forbidden", openapitest.Bearer(memberTok))
	c.Code("GET", other+"/oidc_clients", "", 404, "not_found", openapitest.Bearer(memberTok))

	one := base + "/" + created.ClientID
	c.Code("DELETE", one, "", 401, "unauthorized")
	c.Code("DELETE", one, "", 403, "forbidden", openapitest.Bearer(memberTok))
	c.Do("DELETE", one, "", 204, openapitest.Bearer(ownerTok))
	c.Code("DELETE", one, "", 404, "not_found", openapitest.Bearer(ownerTok))
}

// exerciseOIDCConsents drives the caller's consent routes: the owner
// allows a client of acct (through the store, as the authorization
// endpoint does), lists it, and withdraws it. The 403 insufficient_scope,
// the 404 without a database and the 500 come from the passes over
// oaRoutes.
func exerciseOIDCConsents(t *testing.T, c *openapitest.Client, env *identitytest.Env, acctID, ownerTok string, evil openapitest.Option) {
	t.Helper()
	ctx := context.Background()
	owner := env.Principal(t, ownerTok, "")
	admin := env.Principal(t, ownerTok, acctID)
	cl, _, err := identity.RegisterOIDCClient(ctx, env.Store, admin, identity.RegisterOIDCClientInput{
		Name: "Consented", RedirectURIs: []string{"https://consented.example/cb"}, Scopes: []string{"openid", "email"},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := identity.OIDCAuthRequest{ID: uuid.NewString(), ClientID: cl.ID, RedirectURI: "https://consented.example/cb", Scopes: []string{"openid", "email"}, ResponseType: "code"}
	if err := env.Store.CreateOIDCAuthRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SignInOIDCAuthRequest(ctx, req.ID, owner.User.ID, owner.SessionID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ConsentOIDCAuthRequest(ctx, req.ID, owner.User.ID); err != nil {
		t.Fatal(err)
	}
	var list struct {
		OIDCConsents []struct {
			ClientID   string   `json:"client_id"`
			ClientName string   `json:"client_name"`
			Scopes     []string `json:"scopes"`
		} `json:"oidc_consents"`
	}
	c.JSON("GET", "/v1/me/oidc_consents", "", 200, &list, openapitest.Bearer(ownerTok))
	if len(list.OIDCConsents) != 1 || list.OIDCConsents[0].ClientID != cl.ID || list.OIDCConsents[0].ClientName != "Consented" || len(list.OIDCConsents[0].Scopes) != 2 {
		t.Errorf("GET /v1/me/oidc_consents = %+v, want the one client with its two scopes", list.OIDCConsents)
	}
	c.Code("GET", "/v1/me/oidc_consents", "", 401, "unauthorized")
	one := "/v1/me/oidc_consents/" + cl.ID
	c.Code("DELETE", one, "", 401, "unauthorized")
	c.Code("DELETE", one, "", 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+ownerTok), evil)
	c.Do("DELETE", one, "", 204, openapitest.Bearer(ownerTok))
	c.Code("DELETE", one, "", 404, "not_found", openapitest.Bearer(ownerTok))
	c.Code("DELETE", "/v1/me/oidc_consents/not-a-uuid", "", 404, "not_found", openapitest.Bearer(ownerTok))
	c.JSON("GET", "/v1/me/oidc_consents", "", 200, &list, openapitest.Bearer(ownerTok))
	if len(list.OIDCConsents) != 0 {
		t.Errorf("after the withdrawal GET /v1/me/oidc_consents = %+v, want none", list.OIDCConsents)
	}
}
