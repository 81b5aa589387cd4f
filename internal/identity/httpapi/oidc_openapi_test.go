package httpapi

import (
	"testing"

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
