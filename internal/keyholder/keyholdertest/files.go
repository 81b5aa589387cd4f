package keyholdertest

import (
	"context"
	"os"
	"path/filepath"
	"sort"

	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
)

// PushFiles pushes files (name to content) upstream as repo:tag with ORAS,
// as `platform keyholder publish --files` does, and returns the
// manifest's digest.
func (p *Platform) PushFiles(repo, tag string, files map[string][]byte) string {
	p.t.Helper()
	dir := p.t.TempDir()
	paths := make([]string, 0, len(files))
	for n, b := range files {
		path := filepath.Join(dir, n)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			p.t.Fatal(err)
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	d, err := keyholdercmd.PushFiles(context.Background(), p.RegistryURL, "", "", repo, tag, paths)
	if err != nil {
		p.t.Fatalf("push files %s:%s: %v", repo, tag, err)
	}
	return d
}

// APIKey creates an API key of the customer's account with scopes and
// returns its token.
func (p *Platform) APIKey(c Customer, scopes ...string) string {
	p.t.Helper()
	var out struct {
		Token string `json:"token"`
	}
	if st, raw := p.Call("POST", p.IdentityURL+"/v1/accounts/"+c.AccountID+"/api_keys", c.Token,
		map[string]any{"name": "ci", "scopes": scopes}, &out); st != 201 || out.Token == "" {
		p.t.Fatalf("api key: %d %s", st, raw)
	}
	return out.Token
}
