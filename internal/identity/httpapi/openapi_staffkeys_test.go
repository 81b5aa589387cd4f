package httpapi

import (
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/openapi/openapitest"
)

// exerciseStaffKeys is the conformance suite's part for the release
// pipelines' keys (licensing.md section 4): staff issue, list and revoke
// them; the publishing check admits a staff session and such a key, and
// refuses a person who is not staff and any other key. staffTok is a live
// session of a staff member; ownerTok of someone who is not staff.
func exerciseStaffKeys(t *testing.T, c *openapitest.Client, staffTok, ownerTok string) {
	t.Helper()
	staff, owner := openapitest.Bearer(staffTok), openapitest.Bearer(ownerTok)
	plain := openapitest.Header("Content-Type", "text/plain")
	evil := openapitest.Header("Origin", "https://evil.example")
	var accounts []struct{ ID string }
	c.JSON("GET", "/v1/accounts", "", 200, &accounts, staff)
	var ownerAccounts []struct{ ID string }
	c.JSON("GET", "/v1/accounts", "", 200, &ownerAccounts, owner)
	company, theirs := accounts[0].ID, ownerAccounts[0].ID
	body := `{"name":"release pipeline","account_id":"` + company + `"}`

	c.Code("POST", "/v1/operator/api_keys", body, 401, "unauthorized")
	c.Code("POST", "/v1/operator/api_keys", body, 403, "forbidden", owner)
	c.Code("POST", "/v1/operator/api_keys", body, 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+staffTok), evil)
	c.Code("POST", "/v1/operator/api_keys", `{"name":"x","account_id":"`+theirs+`"}`, 404, "not_found", staff)
	c.Code("POST", "/v1/operator/api_keys", `{"name":"","account_id":""}`, 422, "validation_failed", staff)
	c.Code("POST", "/v1/operator/api_keys", `{"name":"x","account_id":"`+company+`","scopes":["releases:publish"]}`, 400, "malformed_json", staff)
	c.Code("POST", "/v1/operator/api_keys", body, 415, "unsupported_media_type", staff, plain)
	c.Code("POST", "/v1/operator/api_keys", `{"name":"`+strings.Repeat("a", httpx.MaxBodyBytes)+`"}`, 413, "body_too_large", staff)
	var created struct {
		APIKey struct{ ID string } `json:"api_key"`
		Token  string
	}
	c.JSON("POST", "/v1/operator/api_keys", body, 201, &created, staff)
	key := openapitest.Bearer(created.Token)

	c.Do("GET", "/v1/operator/api_keys", "", 200, staff)
	c.Code("GET", "/v1/operator/api_keys", "", 401, "unauthorized")
	c.Code("GET", "/v1/operator/api_keys", "", 403, "forbidden", owner)
	c.Code("GET", "/v1/operator/api_keys", "", 403, "insufficient_scope", key)

	var pub struct {
		UserID   string  `json:"user_id"`
		APIKeyID *string `json:"api_key_id"`
	}
	c.JSON("GET", "/v1/operator/publisher", "", 200, &pub, key)
	if pub.APIKeyID == nil || *pub.APIKeyID != created.APIKey.ID || pub.UserID == "" {
		t.Errorf("publisher with the key = %+v, want its creator and the key", pub)
	}
	c.JSON("GET", "/v1/operator/publisher", "", 200, &pub, staff)
	if pub.APIKeyID != nil {
		t.Errorf("publisher with a session names a key: %+v", pub)
	}
	c.Code("GET", "/v1/operator/publisher", "", 401, "unauthorized")
	c.Code("GET", "/v1/operator/publisher", "", 403, "forbidden", owner)
	// The key passes no other staff check, and reads no account.
	c.Code("GET", "/v1/operator/me", "", 403, "insufficient_scope", key)
	c.Code("GET", "/v1/accounts/"+company, "", 404, "not_found", key)

	id := "/v1/operator/api_keys/" + created.APIKey.ID
	c.Code("DELETE", id, "", 401, "unauthorized")
	c.Code("DELETE", id, "", 403, "forbidden", owner)
	c.Do("DELETE", id, "", 204, staff)
	c.Code("DELETE", id, "", 404, "not_found", staff)
	c.Code("GET", "/v1/operator/publisher", "", 401, "unauthorized", key)
}
