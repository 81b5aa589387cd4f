package httpapi_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/license"
)

// TestInstallationLicense: an activation's licence verifies with the
// license package against the public key set, and independently with a
// plain crypto/ed25519 check of its JWS; its claims name the installation.
// Revoking the entitlement ends the installation (410 on its heartbeat).
func TestInstallationLicense(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		ent := e.grant(account, "platform", "^1.2.0")
		res := e.do("POST", "/v1/accounts/"+account+"/installations", buyerToken, `{"product":"platform","fingerprint":"host-7","name":"Build server","version":"1.4.2"}`)
		if res.status != 201 {
			t.Fatalf("activate: %d %s", res.status, res.raw)
		}
		inst := res.object("installation")
		if inst["status"] != "active" || inst["fingerprint"] != "host-7" || inst["version"] != "1.4.2" {
			t.Errorf("installation = %v", inst)
		}
		file, _ := res.body["license"].(string)

		keysRes := e.do("GET", "/v1/license/keys", "", "")
		keys, err := license.ParseKeySet([]byte(keysRes.raw))
		if keysRes.status != 200 || err != nil {
			t.Fatalf("key set: %d %s: %v", keysRes.status, keysRes.raw, err)
		}
		c, err := license.Verify([]byte(file), keys, license.Options{Fingerprint: "host-7", Version: "1.9.0"})
		if err != nil {
			t.Fatalf("Verify: %v\n%s", err, file)
		}
		if c.Subject != inst["id"] || c.AccountID != account || c.AccountName != "Team" || c.Product != "platform" ||
			c.VersionRange == nil || *c.VersionRange != "^1.2.0" || c.EntitlementID != int64(ent["id"].(float64)) ||
			c.Issuer != "https://box.example.com" || time.Unix(c.ExpiresAt, 0).Sub(time.Unix(c.IssuedAt, 0)) != 720*time.Hour {
			t.Errorf("claims = %+v", c)
		}
		if _, err := license.Verify([]byte(file), keys, license.Options{Fingerprint: "host-8"}); err == nil {
			t.Error("a licence verified for another fingerprint")
		}

		// The plain check: the JWK's x, the JWS's three parts, ed25519.
		var set struct{ Keys []struct{ X, Kid string } }
		if err := json.Unmarshal([]byte(keysRes.raw), &set); err != nil || len(set.Keys) != 1 {
			t.Fatalf("key set %s: %v", keysRes.raw, err)
		}
		lines := strings.Split(strings.TrimSpace(file), "\n")
		jws, err := base64.StdEncoding.DecodeString(strings.Join(lines[1:len(lines)-1], ""))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(jws), ".")
		x, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		if len(parts) != 3 || !ed25519.Verify(ed25519.PublicKey(x), []byte(parts[0]+"."+parts[1]), sig) {
			t.Fatal("crypto/ed25519 does not verify the licence's JWS")
		}

		renewed := e.do("POST", "/v1/installations/"+inst["id"].(string)+"/license", buyerToken, "")
		if renewed.status != 200 {
			t.Fatalf("renew: %d %s", renewed.status, renewed.raw)
		}
		if _, err := license.Verify([]byte(renewed.body["license"].(string)), keys, license.Options{Fingerprint: "host-7"}); err != nil {
			t.Errorf("renewed licence: %v", err)
		}

		e.do("POST", "/v1/operator/entitlements/"+idPath(ent)+"/revoke", staffToken, "")
		hb := e.do("POST", "/v1/installations/"+inst["id"].(string)+"/heartbeat", buyerToken, `{}`)
		if hb.status != 410 || hb.errorCode() != "installation_ended" {
			t.Errorf("heartbeat after the revoke: %d %s, want 410 installation_ended", hb.status, hb.raw)
		}
		list := e.do("GET", "/v1/accounts/"+account+"/installations", buyerToken, "")
		if rows := list.list("installations"); len(rows) != 1 || rows[0]["status"] != "revoked" {
			t.Errorf("installations after the revoke: %s", list.raw)
		}
	})
}

// TestActivationFingerprints: a fingerprint is 1–128 printable ASCII
// characters; anything else is 422 naming the field.
func TestActivationFingerprints(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "platform", "")
		for _, tc := range []struct {
			name, fingerprint string
			status            int
		}{
			{"OK", "a b~!", 201},
			{"OK128", strings.Repeat("f", 128), 201},
			{"ErrEmpty", "", 422},
			{"ErrTooLong", strings.Repeat("f", 129), 422},
			{"ErrControl", "line\\nbreak", 422},
			{"ErrDelete", "\\u007f", 422},
			{"ErrNotASCII", "café", 422},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := e.do("POST", "/v1/accounts/"+account+"/installations", buyerToken, `{"product":"platform","fingerprint":"`+tc.fingerprint+`","name":"n"}`)
				if res.status != tc.status || (tc.status == 422 && !strings.Contains(res.errorMessage(), "fingerprint")) {
					t.Errorf("status %d %s, want %d", res.status, res.raw, tc.status)
				}
			})
		}
	})
}
