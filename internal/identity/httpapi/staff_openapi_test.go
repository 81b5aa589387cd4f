package httpapi

import (
	"testing"

	"github.com/platformco/platform/internal/openapi/openapitest"
)

// exerciseStaffAccounts drives the declared responses of the staff
// account routes for TestOpenAPIConformance (insufficient_scope, 404
// without a database and the 500s come from its passes over oaRoutes).
// acct is a team path (/v1/accounts/{id}) with three members.
func exerciseStaffAccounts(t *testing.T, c *openapitest.Client, acct, staffTok, customerTok string) {
	t.Helper()
	one := "/v1/operator/accounts/" + acct[len("/v1/accounts/"):]
	c.Do("GET", one, "", 200, openapitest.Bearer(staffTok))
	c.Code("GET", one, "", 401, "unauthorized")
	c.Code("GET", one, "", 403, "forbidden", openapitest.Bearer(customerTok))
	c.Code("GET", "/v1/operator/accounts/"+uuidZero, "", 404, "not_found", openapitest.Bearer(staffTok))
	c.Code("GET", "/v1/operator/accounts/not-a-uuid", "", 404, "not_found", openapitest.Bearer(staffTok))

	members := one + "/members"
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	c.JSON("GET", members+"?limit=1", "", 200, &page, openapitest.Bearer(staffTok))
	if page.NextCursor == nil {
		t.Fatal("staff members?limit=1 of three: no next_cursor")
	}
	c.Do("GET", members+"?limit=1&cursor="+*page.NextCursor, "", 200, openapitest.Bearer(staffTok))
	c.Code("GET", members, "", 401, "unauthorized")
	c.Code("GET", members, "", 403, "forbidden", openapitest.Bearer(customerTok))
	c.Code("GET", "/v1/operator/accounts/"+uuidZero+"/members", "", 404, "not_found", openapitest.Bearer(staffTok))
	c.Code("GET", members+"?limit=201", "", 422, "validation_failed", openapitest.Bearer(staffTok))
}
