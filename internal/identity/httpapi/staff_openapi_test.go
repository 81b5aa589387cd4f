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

	var found struct {
		Accounts []struct {
			ID string `json:"id"`
		} `json:"accounts"`
		NextCursor *string `json:"next_cursor"`
	}
	c.JSON("GET", "/v1/operator/accounts?limit=1", "", 200, &found, openapitest.Bearer(staffTok))
	if len(found.Accounts) != 1 || found.NextCursor == nil {
		t.Fatalf("staff accounts?limit=1: %+v", found)
	}
	c.Do("GET", "/v1/operator/accounts?limit=1&cursor="+*found.NextCursor, "", 200, openapitest.Bearer(staffTok))
	c.Do("GET", "/v1/operator/accounts?query=example.com", "", 200, openapitest.Bearer(staffTok))
	c.Code("GET", "/v1/operator/accounts?query=x", "", 422, "validation_failed", openapitest.Bearer(staffTok))
	c.Code("GET", "/v1/operator/accounts", "", 401, "unauthorized")
	c.Code("GET", "/v1/operator/accounts", "", 403, "forbidden", openapitest.Bearer(customerTok))

	// The trail of staff changes: the staff caller was made staff once.
	var trail struct {
		Changes []struct {
			Action string  `json:"action"`
			Email  *string `json:"email"`
		} `json:"changes"`
		NextCursor *string `json:"next_cursor"`
	}
	c.JSON("GET", "/v1/operator/staff-changes?limit=1", "", 200, &trail, openapitest.Bearer(staffTok))
	if len(trail.Changes) != 1 || trail.Changes[0].Action != "enabled" || trail.Changes[0].Email == nil {
		t.Fatalf("staff-changes?limit=1: %+v", trail)
	}
	c.Code("GET", "/v1/operator/staff-changes?cursor=not-ours", "", 422, "validation_failed", openapitest.Bearer(staffTok))
	c.Code("GET", "/v1/operator/staff-changes", "", 401, "unauthorized")
	c.Code("GET", "/v1/operator/staff-changes", "", 403, "forbidden", openapitest.Bearer(customerTok))

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
