package keyholdercmd_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestPublishWithStaffKey: a release pipeline publishes with a staff key
// (scope releases:publish) in PLATFORM_TOKEN instead of a person's
// session (licensing.md section 4). Only staff create one; the key does
// nothing but publish; once revoked it publishes nothing.
func TestPublishWithStaffKey(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		var accounts []struct{ ID string }
		if st, raw := p.Call("GET", p.IdentityURL+"/v1/accounts", p.StaffToken, nil, &accounts); st != http.StatusOK || len(accounts) == 0 {
			t.Fatalf("operator's accounts: %d %s", st, raw)
		}
		company := accounts[0].ID
		customer := p.NewCustomer("customer@example.com")

		// Nobody but staff creates one, and not in an account they are
		// no admin of; an account's admin cannot give the scope.
		for _, tc := range []struct {
			name, token, account string
			want                 int
		}{
			{"ErrNotStaff", customer.Token, customer.AccountID, http.StatusForbidden},
			{"ErrNoToken", "", company, http.StatusUnauthorized},
			{"ErrNotAMember", p.StaffToken, customer.AccountID, http.StatusNotFound},
		} {
			if st, raw := p.Call("POST", p.IdentityURL+"/v1/operator/api_keys", tc.token, map[string]string{"name": "ci", "account_id": tc.account}, nil); st != tc.want {
				t.Errorf("%s: create = %d %s, want %d", tc.name, st, raw, tc.want)
			}
		}
		if st, raw := p.Call("POST", p.IdentityURL+"/v1/accounts/"+customer.AccountID+"/api_keys", customer.Token,
			map[string]any{"name": "ci", "scopes": []string{"releases:publish"}}, nil); st != http.StatusUnprocessableEntity {
			t.Errorf("account key with releases:publish = %d %s, want 422", st, raw)
		}

		var created struct {
			APIKey struct {
				ID     string
				Scopes []string
			} `json:"api_key"`
			Token string
		}
		if st, raw := p.Call("POST", p.IdentityURL+"/v1/operator/api_keys", p.StaffToken, map[string]string{"name": "release pipeline", "account_id": company}, &created); st != http.StatusCreated || !strings.HasPrefix(created.Token, "plat_") {
			t.Fatalf("create = %d %s", st, raw)
		}
		key := created.Token

		dir := t.TempDir()
		file := filepath.Join(dir, "platform-linux-amd64.tar.gz")
		if err := os.WriteFile(file, []byte("release bytes"), 0o600); err != nil {
			t.Fatal(err)
		}
		publish := func(version string) (string, error) {
			env := map[string]string{"KEYHOLDER_REGISTRY_URL": p.RegistryURL, "BOX_URL": p.BoxURL, "PLATFORM_TOKEN": key}
			var out bytes.Buffer
			err := keyholdercmd.Command.Run(context.Background(), []string{"publish", "--repository", "platform", "--version", version, "--files", file},
				cli.Env{Getenv: envOf(env), Stdout: &out, Stderr: &out})
			return out.String(), err
		}
		if out, err := publish("2.0.0"); err != nil || !strings.Contains(out, "published release platform 2.0.0") {
			t.Fatalf("publish with the key: %v\n%s", err, out)
		}
		var me struct{ ID string }
		p.Call("GET", p.IdentityURL+"/v1/me", p.StaffToken, nil, &me)
		var releases struct {
			Releases []struct {
				Version     string
				PublishedBy string `json:"published_by"`
			}
		}
		if st, raw := p.Call("GET", p.BoxURL+"/v1/operator/releases?product=platform", p.StaffToken, nil, &releases); st != http.StatusOK ||
			len(releases.Releases) != 1 || releases.Releases[0].PublishedBy != me.ID {
			t.Errorf("box releases = %d %s, want 2.0.0 published by the key's creator %s", st, raw, me.ID)
		}

		// The key does nothing but publish.
		for _, tc := range []struct {
			name, method, url string
			body              any
			want              int
		}{
			{"IdentityOperatorMe", "GET", p.IdentityURL + "/v1/operator/me", nil, http.StatusForbidden},
			{"IdentityStaffKeys", "GET", p.IdentityURL + "/v1/operator/api_keys", nil, http.StatusForbidden},
			{"IdentityCreateStaffKey", "POST", p.IdentityURL + "/v1/operator/api_keys", map[string]string{"name": "x", "account_id": company}, http.StatusForbidden},
			{"IdentityOwnAccount", "GET", p.IdentityURL + "/v1/accounts/" + company, nil, http.StatusNotFound},
			{"IdentityAccountKeys", "GET", p.IdentityURL + "/v1/accounts/" + company + "/api_keys", nil, http.StatusNotFound},
			{"BoxGrant", "POST", p.BoxURL + "/v1/operator/entitlements", map[string]string{"account_id": customer.AccountID, "product": "platform"}, http.StatusForbidden},
			{"BoxReleases", "GET", p.BoxURL + "/v1/operator/releases", nil, http.StatusForbidden},
			{"BoxInstallations", "GET", p.BoxURL + "/v1/operator/installations?account_id=" + customer.AccountID, nil, http.StatusForbidden},
			{"BoxAccountEntitlements", "GET", p.BoxURL + "/v1/accounts/" + company + "/entitlements", nil, http.StatusNotFound},
			{"KeyholderPulls", "GET", p.KeyholderURL + "/v1/operator/accounts/" + customer.AccountID + "/pulls", nil, http.StatusForbidden},
		} {
			if st, raw := p.Call(tc.method, tc.url, key, tc.body, nil); st != tc.want {
				t.Errorf("%s with the key = %d %s, want %d", tc.name, st, raw, tc.want)
			}
		}

		// Listed for staff, then revoked: the next publish is refused.
		var list struct {
			APIKeys []struct{ ID string } `json:"api_keys"`
		}
		if st, raw := p.Call("GET", p.IdentityURL+"/v1/operator/api_keys", p.StaffToken, nil, &list); st != http.StatusOK || len(list.APIKeys) != 1 || list.APIKeys[0].ID != created.APIKey.ID {
			t.Errorf("staff list = %d %s, want the key", st, raw)
		}
		if st, raw := p.Call("DELETE", p.IdentityURL+"/v1/operator/api_keys/"+created.APIKey.ID, customer.Token, nil, nil); st != http.StatusForbidden {
			t.Errorf("revoke by a customer = %d %s, want 403", st, raw)
		}
		if st, raw := p.Call("DELETE", p.IdentityURL+"/v1/operator/api_keys/"+created.APIKey.ID, p.StaffToken, nil, nil); st != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", st, raw)
		}
		if out, err := publish("2.0.1"); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("publish with a revoked key: %v\n%s; want box's 401", err, out)
		}
	})
}
