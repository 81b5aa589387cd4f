package keyholdercmd_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
)

// TestPublishThenPull: publish pushes a layout directory and a tarball
// upstream and publishes each release at box; a customer entitled to the
// range pulls each through keyholder with the pushed digest.
func TestPublishThenPull(t *testing.T) {
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{})
	dir := t.TempDir()

	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	tarImg, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.com/platform:1.3.0")
	if err := tarball.WriteToFile(filepath.Join(dir, "image.tar"), tag, tarImg); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{"KEYHOLDER_REGISTRY_URL": p.RegistryURL, "BOX_URL": p.BoxURL, "PLATFORM_TOKEN": p.StaffToken}
	publish := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := keyholdercmd.Command.Run(context.Background(), append([]string{"publish"}, args...), cli.Env{Getenv: envOf(env), Stdout: &out, Stderr: &out})
		return out.String(), err
	}
	for _, a := range [][]string{
		{"--repository", "platform", "--version", "1.2.0", filepath.Join(dir, "layout")},
		{"--repository", "platform", "--version", "1.3.0", filepath.Join(dir, "image.tar")},
	} {
		if out, err := publish(a...); err != nil || !strings.Contains(out, "published release") {
			t.Fatalf("publish %v: %v\n%s", a, err, out)
		}
	}
	if out, err := publish("--repository", "platform", "--version", "1.2.0", filepath.Join(dir, "layout")); err != nil || !strings.Contains(out, "already published") {
		t.Errorf("republish: got %v %q, want it reported as already published", err, out)
	}

	var releases struct{ Releases []struct{ Version string } }
	if st, raw := p.Call("GET", p.BoxURL+"/v1/operator/releases?product=platform", p.StaffToken, nil, &releases); st != http.StatusOK || len(releases.Releases) != 2 {
		t.Errorf("box releases: got %d %s, want 1.2.0 and 1.3.0", st, raw)
	}

	_, cred := p.Entitled("puller@example.com", "platform", "^1.2.0")
	host := strings.TrimPrefix(p.KeyholderURL, "http://")
	for _, tc := range []struct {
		tag  string
		want string
	}{{"1.2.0", mustDigest(t, img)}, {"1.3.0", mustDigest(t, tarImg)}} {
		got, err := crane.Digest(host+"/platform:"+tc.tag, crane.Insecure, crane.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password}))
		if err != nil || got != tc.want {
			t.Errorf("%s through keyholder: got %s (%v), want %s", tc.tag, got, err, tc.want)
		}
	}
}

// TestPublishFiles: publish --files pushes the files as an ORAS artifact
// and publishes the release; an entitled member downloads each file
// byte-identical through keyholder.
func TestPublishFiles(t *testing.T) {
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{})
	dir := t.TempDir()
	files := map[string][]byte{"platform-linux-amd64.tar.gz": bytes.Repeat([]byte{0x1f, 0x8b, 7}, 40000), "SHA256SUMS": []byte("sums\n")}
	var paths []string
	for n, b := range files {
		path := filepath.Join(dir, n)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	env := map[string]string{"KEYHOLDER_REGISTRY_URL": p.RegistryURL, "BOX_URL": p.BoxURL, "PLATFORM_TOKEN": p.StaffToken}
	var out bytes.Buffer
	args := append([]string{"publish", "--repository", "platform", "--version", "1.4.0", "--notes", "Files.", "--files"}, paths...)
	if err := keyholdercmd.Command.Run(context.Background(), args, cli.Env{Getenv: envOf(env), Stdout: &out, Stderr: &out}); err != nil ||
		!strings.Contains(out.String(), "published release platform 1.4.0") {
		t.Fatalf("publish --files: %v\n%s", err, out.String())
	}
	c := p.NewCustomer("downloader@example.com")
	p.Grant(c, "platform", "^1.4.0")
	for n, want := range files {
		req, _ := http.NewRequest("GET", p.KeyholderURL+"/v1/accounts/"+c.AccountID+"/downloads/platform/1.4.0/files/"+n, nil)
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Errorf("download %s = %d, %d bytes; want 200 and the %d bytes published", n, resp.StatusCode, len(got), len(want))
		}
	}
}

func TestPublishFilesRefuses(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	twin := filepath.Join(sub, "a.txt")
	if err := os.WriteFile(twin, []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PLATFORM_TOKEN": "t", "KEYHOLDER_REGISTRY_URL": "http://127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"NoFile", nil, "--files wants at least one FILE"},
		{"Directory", []string{sub}, "not a regular file"},
		{"SameName", []string{a, twin}, `two files named "a.txt"`},
		{"Missing", []string{filepath.Join(dir, "nope")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			args := append([]string{"publish", "--repository", "kit", "--version", "1.0.0", "--files"}, tt.args...)
			err := keyholdercmd.Command.Run(context.Background(), args, cli.Env{Getenv: envOf(env), Stdout: &out, Stderr: &out})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPublishRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"UnknownRepository", []string{"--repository", "secret", "--version", "1.0.0", "x"}, map[string]string{"PLATFORM_TOKEN": "t"}, "--repository must be one of"},
		{"NotAVersion", []string{"--repository", "kit", "--version", "latest", "x"}, map[string]string{"PLATFORM_TOKEN": "t"}, "--version must be X.Y.Z"},
		{"NoPath", []string{"--repository", "kit", "--version", "1.0.0"}, map[string]string{"PLATFORM_TOKEN": "t"}, "want exactly one"},
		{"NoToken", []string{"--repository", "kit", "--version", "1.0.0", "x"}, map[string]string{}, "PLATFORM_TOKEN: is required"},
		{"MissingPath", []string{"--repository", "kit", "--version", "1.0.0", "/nonexistent/unit"}, map[string]string{"PLATFORM_TOKEN": "t"}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := keyholdercmd.Command.Run(context.Background(), append([]string{"publish"}, tt.args...), cli.Env{Getenv: envOf(tt.env), Stdout: &out, Stderr: &out})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func mustDigest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
