package licensecmd_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/licensecmd"
	"github.com/platformco/platform/license"
)

func TestVerify(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	keys, err := license.KeySet{Keys: []license.Key{{ID: license.KeyID(pub), Public: pub}}}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	rng := "^1.0.0"
	now := time.Now()
	file, err := license.Sign(license.Claims{Subject: "i1", AccountID: "a1", AccountName: "Acme", Product: "platform",
		VersionRange: &rng, Fingerprint: "host-1", EntitlementID: 1, IssuedAt: now.Add(-time.Minute).Unix(), ExpiresAt: now.Add(time.Hour).Unix()}, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lic, keysFile := filepath.Join(dir, "platform.lic"), filepath.Join(dir, "keys.json")
	if err := os.WriteFile(lic, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, keys, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(keys) }))
	defer srv.Close()

	for _, tc := range []struct {
		name  string
		args  []string
		want  string // in stdout, or in the error
		usage bool
	}{
		{"OKFile", []string{"verify", lic, "--keys", keysFile, "--fingerprint", "host-1", "--version", "1.3.0"}, "valid: platform ^1.0.0 for Acme", false},
		{"OKURLFlagsFirst", []string{"verify", "--keys", srv.URL, lic}, "valid: platform", false},
		{"ErrFingerprint", []string{"verify", lic, "--keys", keysFile, "--fingerprint", "host-2"}, "another fingerprint", false},
		{"ErrVersion", []string{"verify", lic, "--keys", keysFile, "--version", "2.0.0"}, "not covered", false},
		{"ErrNoKeys", []string{"verify", lic}, "want FILE and --keys", true},
		{"ErrNoVerb", []string{"check"}, "expected verify", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := licensecmd.Run(context.Background(), tc.args, cli.Env{Stdout: &out, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }})
			got := out.String()
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || cli.IsUsage(err) != tc.usage {
				t.Errorf("got %q (usage %v), want %q", got, cli.IsUsage(err), tc.want)
			}
		})
	}
}
