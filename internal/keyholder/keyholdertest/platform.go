// Package keyholdertest starts the real components keyholder works with,
// in-process, for tests: identity and box on SQLite, an embedded
// Distribution registry, and keyholder itself on the engine under test. It
// also makes the users, grants and capabilities a test needs, over the
// services' own HTTP APIs, and pushes random images upstream.
package keyholdertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/keyholder/embedregistry"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const password = "correct-horse-battery"

// Platform is one running set of components.
type Platform struct {
	t           testing.TB
	IdentityURL string
	BoxURL      string
	RegistryURL string
	// RegistryHost is the registry's host:port, for image references.
	RegistryHost string
	KeyholderURL string
	// KeyholderDB is keyholder's database URL, for inspecting its rows.
	KeyholderDB string
	StaffToken  string
	Logs        *logtest.Buffer

	stopRegistry func()
}

// Options changes how Start builds the platform.
type Options struct {
	// BoxURL, when set, replaces the real box in keyholder's settings (a
	// closed port, to show box being down).
	BoxURL string
	// RegistryURL likewise replaces the upstream registry.
	RegistryURL string
	// Env adds keyholder variables.
	Env map[string]string
	// BoxEnv adds box variables.
	BoxEnv map[string]string
	// IdentityEnv adds identity variables (its mail relay, for one).
	IdentityEnv map[string]string
	// ReferrersAPI makes the upstream a registry with OCI Distribution
	// 1.1's referrers API (go-containerregistry's, in memory) instead of
	// Distribution, which has none (clients use the tag schema there).
	ReferrersAPI bool
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return ln
}

// Start runs identity, box, the registry and keyholder until the test ends.
func Start(t testing.TB, engine sqldb.Engine, opts Options) *Platform {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	logger, logs := logtest.New()
	p := &Platform{t: t, Logs: logs}

	serve := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s stopped: %v", name, err)
			}
		}()
	}

	// identity
	idLn := listen(t)
	p.IdentityURL = "http://" + idLn.Addr().String()
	idDB := "sqlite:" + filepath.Join(dir, "identity.db")
	if err := identitycmd.Migrate(ctx, idDB); err != nil {
		t.Fatalf("identity migrate: %v", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	idEnv := map[string]string{"DATABASE_URL": idDB, "IDENTITY_MASTER_KEY": base64.StdEncoding.EncodeToString(key),
		"IDENTITY_ISSUER": p.IdentityURL}
	for k, v := range opts.IdentityEnv {
		idEnv[k] = v
	}
	var idCfg identitycmd.Config
	if err := config.Load(ctx, func(k string) string { return idEnv[k] }, &idCfg); err != nil {
		t.Fatalf("identity config: %v", err)
	}
	serve("identity", func() error { return identitycmd.Serve(ctx, idCfg, logger.With("service", "identity"), idLn) })

	// box
	boxLn := listen(t)
	p.BoxURL = "http://" + boxLn.Addr().String()
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	if err := boxcmd.Migrate(ctx, boxDB); err != nil {
		t.Fatalf("box migrate: %v", err)
	}
	boxEnv := map[string]string{"DATABASE_URL": boxDB, "BOX_IDENTITY_URL": p.IdentityURL,
		"BOX_MASTER_KEY": base64.StdEncoding.EncodeToString(key)}
	for k, v := range opts.BoxEnv {
		boxEnv[k] = v
	}
	var boxCfg boxcmd.Config
	if err := config.Load(ctx, func(k string) string { return boxEnv[k] }, &boxCfg); err != nil {
		t.Fatalf("box config: %v", err)
	}
	serve("box", func() error { return boxcmd.Serve(ctx, boxCfg, logger.With("service", "box"), boxLn) })

	// the upstream registry
	if opts.ReferrersAPI {
		srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)),
			ggcrregistry.WithReferrersSupport(true)))
		p.stopRegistry = srv.Close
		p.RegistryURL = srv.URL
	} else {
		reg, err := embedregistry.Start(ctx, listen(t), filepath.Join(dir, "registry"), logger.With("service", "registry"))
		if err != nil {
			t.Fatalf("registry: %v", err)
		}
		p.stopRegistry = func() { _ = reg.Stop() }
		p.RegistryURL = reg.URL
	}
	p.RegistryHost = strings.TrimPrefix(p.RegistryURL, "http://")
	t.Cleanup(p.stopRegistry)

	// keyholder
	p.KeyholderDB = sqltest.URL(t, engine)
	if err := keyholdercmd.Migrate(ctx, p.KeyholderDB); err != nil {
		t.Fatalf("keyholder migrate: %v", err)
	}
	khLn := listen(t)
	p.KeyholderURL = "http://" + khLn.Addr().String()
	env := map[string]string{
		"DATABASE_URL": p.KeyholderDB, "KEYHOLDER_BOX_URL": p.BoxURL, "KEYHOLDER_IDENTITY_URL": p.IdentityURL,
		"KEYHOLDER_REGISTRY_URL": p.RegistryURL, "KEYHOLDER_PUBLIC_HOST": khLn.Addr().String(),
	}
	if opts.BoxURL != "" {
		env["KEYHOLDER_BOX_URL"] = opts.BoxURL
	}
	if opts.RegistryURL != "" {
		env["KEYHOLDER_REGISTRY_URL"] = opts.RegistryURL
	}
	for k, v := range opts.Env {
		env[k] = v
	}
	var khCfg keyholdercmd.Config
	if err := config.Load(ctx, func(k string) string { return env[k] }, &khCfg); err != nil {
		t.Fatalf("keyholder config: %v", err)
	}
	serve("keyholder", func() error { return keyholdercmd.Serve(ctx, khCfg, logger.With("service", "keyholder"), khLn) })

	// the operator
	p.register("operator@example.com")
	if err := identitycmd.Command.Run(ctx, []string{"staff", "add", "operator@example.com"},
		cli.Env{Getenv: func(k string) string { return map[string]string{"DATABASE_URL": idDB}[k] }, Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatalf("staff add: %v", err)
	}
	p.StaffToken = p.login("operator@example.com")
	return p
}

// Stop is the registry's own stop, for a test that takes it down.
func (p *Platform) StopRegistry() { p.stopRegistry() }

// Call sends one JSON request and decodes a JSON answer into out (when
// non-nil). It returns the status and the raw body.
func (p *Platform) Call(method, url, token string, body any, out any) (int, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		p.t.Fatalf("request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode, raw
}

func (p *Platform) register(email string) {
	p.t.Helper()
	if st, raw := p.Call("POST", p.IdentityURL+"/v1/users", "", map[string]string{"email": email, "password": password}, nil); st != http.StatusCreated {
		p.t.Fatalf("register %s: %d %s", email, st, raw)
	}
}

func (p *Platform) login(email string) string {
	p.t.Helper()
	var s struct{ Token string }
	if st, raw := p.Call("POST", p.IdentityURL+"/v1/session", "", map[string]string{"email": email, "password": password}, &s); st != http.StatusCreated {
		p.t.Fatalf("login %s: %d %s", email, st, raw)
	}
	return s.Token
}

// Customer is a registered user and their personal account.
type Customer struct {
	Token     string
	AccountID string
}

// NewCustomer registers email and returns its session and account.
func (p *Platform) NewCustomer(email string) Customer {
	p.t.Helper()
	p.register(email)
	c := Customer{Token: p.login(email)}
	var accounts []struct{ ID string }
	if st, raw := p.Call("GET", p.IdentityURL+"/v1/accounts", c.Token, nil, &accounts); st != http.StatusOK || len(accounts) == 0 {
		p.t.Fatalf("accounts of %s: %d %s", email, st, raw)
	}
	c.AccountID = accounts[0].ID
	return c
}

// Grant grants product to the customer's account ("" range: every version).
func (p *Platform) Grant(c Customer, product, versionRange string) {
	p.t.Helper()
	body := map[string]any{"account_id": c.AccountID, "product": product}
	if versionRange != "" {
		body["version_range"] = versionRange
	}
	if st, raw := p.Call("POST", p.BoxURL+"/v1/operator/entitlements", p.StaffToken, body, nil); st != http.StatusCreated {
		p.t.Fatalf("grant %s: %d %s", product, st, raw)
	}
}

// Capability asks box for a pull capability of artifact ("" range: what
// the grant allows).
func (p *Platform) Capability(c Customer, artifact, versionRange string) string {
	p.t.Helper()
	body := map[string]any{"artifact": artifact}
	if versionRange != "" {
		body["version_range"] = versionRange
	}
	var out struct {
		Capability struct{ Token string } `json:"capability"`
	}
	if st, raw := p.Call("POST", p.BoxURL+"/v1/accounts/"+c.AccountID+"/artifact_fetches", c.Token, body, &out); st != http.StatusCreated {
		p.t.Fatalf("artifact fetch %s: %d %s", artifact, st, raw)
	}
	return out.Capability.Token
}

// Credential is an exchanged registry credential.
type Credential struct {
	Username     string    `json:"username"`
	Password     string    `json:"password"`
	Registry     string    `json:"registry"`
	Repository   string    `json:"repository"`
	VersionRange *string   `json:"version_range"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// Exchange trades capability for a credential at keyholder.
func (p *Platform) Exchange(capability string) Credential {
	p.t.Helper()
	var out struct{ Credential Credential }
	if st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": capability}, &out); st != http.StatusCreated {
		p.t.Fatalf("exchange: %d %s", st, raw)
	}
	return out.Credential
}

// Entitled is Grant, Capability and Exchange in one: a customer with a
// credential for product within versionRange.
func (p *Platform) Entitled(email, product, versionRange string) (Customer, Credential) {
	p.t.Helper()
	c := p.NewCustomer(email)
	p.Grant(c, product, versionRange)
	return c, p.Exchange(p.Capability(c, product, versionRange))
}

// PushImage pushes a random image (layers of size bytes each) upstream as
// repo:tag and returns it.
func (p *Platform) PushImage(repo, tag string, size int64, layers int64) v1.Image {
	p.t.Helper()
	img, err := random.Image(size, layers)
	if err != nil {
		p.t.Fatalf("random image: %v", err)
	}
	p.Push(repo, tag, img)
	return img
}

// Push writes img upstream as repo:tag.
func (p *Platform) Push(repo, tag string, img v1.Image) {
	p.t.Helper()
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", p.RegistryHost, repo, tag), name.Insecure)
	if err != nil {
		p.t.Fatalf("reference: %v", err)
	}
	if err := remote.Write(ref, img); err != nil {
		p.t.Fatalf("push %s:%s: %v", repo, tag, err)
	}
}

// PushIndex pushes a random index of n images as repo:tag.
func (p *Platform) PushIndex(repo, tag string, n int64) v1.ImageIndex {
	p.t.Helper()
	idx, err := random.Index(512, 1, n)
	if err != nil {
		p.t.Fatalf("random index: %v", err)
	}
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", p.RegistryHost, repo, tag), name.Insecure)
	if err != nil {
		p.t.Fatalf("reference: %v", err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		p.t.Fatalf("push index %s:%s: %v", repo, tag, err)
	}
	return idx
}

// Logger is a discarding logger for callers that need one.
func Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }
