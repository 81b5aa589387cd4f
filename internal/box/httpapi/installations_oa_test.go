package httpapi_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
)

// testLicenseKey is the suite's licence key, from a fixed seed.
var testLicenseKey = ed25519.NewKeyFromSeed([]byte(strings.Repeat("k", ed25519.SeedSize)))

func testLicensing() box.Licensing {
	return box.Licensing{Issuer: "https://box.example.com", Keys: []ed25519.PrivateKey{testLicenseKey}}
}

// lapse moves an installation's last heartbeat two TTLs into the past, as
// if it had not been seen since.
func lapse(t *testing.T, db *sqldb.DB, id string) {
	t.Helper()
	past := sqldb.Timestamp(time.Now().Add(-2 * box.DefaultInstallationTTL))
	if _, err := db.Exec(context.Background(), `UPDATE installations SET last_seen_at = $2, lapses_at = $3 WHERE id = $1`,
		id, past, past.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// exerciseInstallations is the conformance suite's part for installations
// and licences; the account holds platform (^1.0.0) already. It returns
// an active installation's id.
func exerciseInstallations(t *testing.T, c *openapitest.Client, e *env) string {
	t.Helper()
	staff, buyer, stranger := openapitest.Bearer(staffToken), openapitest.Bearer(buyerToken), openapitest.Bearer(strangerTok)
	plain := openapitest.Header("Content-Type", "text/plain")
	big := `{"fingerprint":"` + strings.Repeat("a", httpx.MaxBodyBytes) + `"}`
	acct := "/v1/accounts/" + account
	installs := acct + "/installations"

	c.Do("GET", "/v1/license/keys", "", 200)
	c.Do("POST", "/v1/operator/entitlements", `{"account_id":"`+account+`","product":"identity","max_installations":1}`, 201, staff)
	c.Code("POST", "/v1/operator/entitlements", `{"account_id":"`+otherAcct+`","product":"identity","max_installations":0}`, 422, "unprocessable", staff)

	var first struct {
		Installation struct{ ID string }
		License      *string
	}
	c.JSON("POST", installs, `{"product":"identity","fingerprint":"host-1","name":"Primary"}`, 201, &first, buyer)
	if first.License == nil || !strings.HasPrefix(*first.License, "-----BEGIN PLATFORM LICENSE-----\n") {
		t.Errorf("activation's licence = %v", first.License)
	}
	c.Do("POST", installs, `{"product":"identity","fingerprint":"host-1","name":"Primary","version":"2.0.0"}`, 200, buyer)
	c.Code("POST", installs, `{"product":"identity","fingerprint":"host-2","name":"Second"}`, 409, "installation_limit", buyer)
	c.Code("POST", installs, `{"product":"courier","fingerprint":"host-1","name":"n"}`, 403, "entitlement_required", buyer)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"host-1","name":"n","version":"2.0.0"}`, 403, "version_not_granted", buyer)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"bell\u0007","name":"n"}`, 422, "unprocessable", buyer)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"`+strings.Repeat("f", 129)+`","name":"n"}`, 422, "unprocessable", buyer)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"f","name":"n","seats":3}`, 400, "malformed_json", buyer)
	c.Code("POST", installs, `{"product":"platform"}`, 415, "unsupported_media_type", buyer, plain)
	c.Code("POST", installs, big, 413, "body_too_large", buyer)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"f","name":"n"}`, 404, "not_found", stranger)
	c.Code("POST", installs, `{"product":"platform","fingerprint":"f","name":"n"}`, 401, "unauthenticated")
	c.Do("GET", installs, "", 200, buyer)
	c.Code("GET", installs, "", 404, "not_found", stranger)
	c.Code("GET", installs, "", 401, "unauthenticated")

	// host-1 lapses, host-2 takes its place; host-1's heartbeat and licence
	// then find the grant full.
	lapse(t, e.db, first.Installation.ID)
	var second struct{ Installation struct{ ID string } }
	c.JSON("POST", installs, `{"product":"identity","fingerprint":"host-2","name":"Second"}`, 201, &second, buyer)
	one, two := "/v1/installations/"+first.Installation.ID, "/v1/installations/"+second.Installation.ID
	c.Code("POST", one+"/heartbeat", `{}`, 409, "installation_limit", buyer)
	c.Code("POST", one+"/license", "", 409, "installation_limit", buyer)
	c.Do("POST", two+"/heartbeat", "", 200, buyer)
	c.Do("POST", two+"/heartbeat", `{"version":"1.0.1"}`, 200, buyer)
	c.Code("POST", two+"/heartbeat", `{"version":"one"}`, 422, "unprocessable", buyer)
	c.Code("POST", two+"/heartbeat", `{"version":1}`, 400, "malformed_json", buyer)
	c.Code("POST", two+"/heartbeat", `{}`, 415, "unsupported_media_type", buyer, plain)
	c.Code("POST", two+"/heartbeat", big, 413, "body_too_large", buyer)
	c.Do("POST", two+"/license", "", 200, buyer)
	c.Do("DELETE", two, "", 200, buyer)
	c.Code("POST", two+"/heartbeat", `{}`, 410, "installation_ended", buyer)
	c.Code("POST", two+"/license", "", 410, "installation_ended", buyer)
	for _, rt := range []struct{ method, path, body string }{
		{"POST", one + "/heartbeat", `{}`}, {"DELETE", one, ""}, {"POST", one + "/license", ""},
	} {
		c.Code(rt.method, rt.path, rt.body, 404, "not_found", stranger)
		c.Code(rt.method, rt.path, rt.body, 401, "unauthenticated")
		c.Code(rt.method, "/v1/installations/0190a1b2-0000-7000-8000-000000000000"+strings.TrimPrefix(rt.path, one), rt.body, 404, "not_found", buyer)
	}

	ops := "/v1/operator/installations"
	c.Do("GET", ops+"?account_id="+account+"&limit=10", "", 200, staff)
	c.Code("GET", ops+"?account_id=nope", "", 422, "unprocessable", staff)
	c.Code("GET", ops, "", 403, "forbidden", buyer)
	c.Code("GET", ops, "", 401, "unauthenticated")

	// An active installation for the remaining checks.
	var active struct{ Installation struct{ ID string } }
	c.JSON("POST", installs, `{"product":"platform","fingerprint":"host-9","name":"Ninth","version":"1.4.0"}`, 201, &active, buyer)
	return active.Installation.ID
}
