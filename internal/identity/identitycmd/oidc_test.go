package identitycmd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestServeMountsTheOpenIDProvider: serve answers discovery and publishes
// the same key set for ID tokens as for session tokens.
func TestServeMountsTheOpenIDProvider(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		base := serve(t, url, url, 5*time.Second)
		waitReady(t, base)
		code, body := call(t, "GET", base+"/.well-known/openid-configuration", "")
		if code != 200 {
			t.Fatalf("discovery: got %d %s", code, body)
		}
		var disc struct{ AuthorizationEndpoint, JWKSURI string }
		var raw map[string]any
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatal(err)
		}
		disc.AuthorizationEndpoint, _ = raw["authorization_endpoint"].(string)
		disc.JWKSURI, _ = raw["jwks_uri"].(string)
		if !strings.HasSuffix(disc.AuthorizationEndpoint, "/oauth2/authorize") || !strings.HasSuffix(disc.JWKSURI, "/oauth2/keys") {
			t.Errorf("discovery endpoints: got %s and %s", disc.AuthorizationEndpoint, disc.JWKSURI)
		}
		_, idKeys := call(t, "GET", base+"/oauth2/keys", "")
		_, sessionKeys := call(t, "GET", base+"/.well-known/jwks.json", "")
		var a, b struct{ Keys []struct{ Kid string } }
		_ = json.Unmarshal([]byte(idKeys), &a)
		_ = json.Unmarshal([]byte(sessionKeys), &b)
		if len(a.Keys) == 0 || len(b.Keys) == 0 || a.Keys[0].Kid != b.Keys[0].Kid {
			t.Errorf("key sets: got %s for ID tokens and %s for sessions, want the same keys", idKeys, sessionKeys)
		}
	})
}
