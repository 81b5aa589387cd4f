package keyholdercmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func loadConfig(getenv func(string) string) (keyholdercmd.Config, error) {
	var cfg keyholdercmd.Config
	err := keyholdercmd.Command.Load(context.Background(), getenv, &cfg)
	return cfg, err
}

func base() map[string]string {
	return map[string]string{
		"DATABASE_URL": "sqlite:/tmp/k.db", "KEYHOLDER_BOX_URL": "http://127.0.0.1:8082",
		"KEYHOLDER_REGISTRY_URL": "http://127.0.0.1:8086",
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := loadConfig(envOf(base()))
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	if cfg.Port != 8084 || cfg.CredentialTTL != time.Hour || cfg.PublicHost != "localhost:8084" {
		t.Errorf("got port %d ttl %s host %q, want 8084 1h localhost:8084", cfg.Port, cfg.CredentialTTL, cfg.PublicHost)
	}
}

func TestConfigNamesTheVariable(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"MissingBox", "KEYHOLDER_BOX_URL", "", "KEYHOLDER_BOX_URL: is required"},
		{"MissingRegistry", "KEYHOLDER_REGISTRY_URL", "", "KEYHOLDER_REGISTRY_URL: is required"},
		{"MissingDatabase", "DATABASE_URL", "", "DATABASE_URL: is required"},
		{"BadDatabase", "DATABASE_URL", "mysql://x", "DATABASE_URL:"},
		{"BadPort", "PORT", "eighty", "PORT: must be a port number"},
		{"PortTooLarge", "PORT", "70000", "PORT: must be a port number"},
		{"BadTTL", "KEYHOLDER_CREDENTIAL_TTL", "soon", "KEYHOLDER_CREDENTIAL_TTL: must be a positive Go duration"},
		{"TTLOver24h", "KEYHOLDER_CREDENTIAL_TTL", "25h", "KEYHOLDER_CREDENTIAL_TTL: must be a positive Go duration of at most 24h"},
		{"NegativeTTL", "KEYHOLDER_CREDENTIAL_TTL", "-1m", "KEYHOLDER_CREDENTIAL_TTL:"},
		{"RelativeBoxURL", "KEYHOLDER_BOX_URL", "box:8082", "KEYHOLDER_BOX_URL: must be an absolute http(s) URL"},
		{"RegistryURLWithCredentials", "KEYHOLDER_REGISTRY_URL", "https://u:secret@reg.example", "KEYHOLDER_REGISTRY_URL: must be an absolute http(s) URL without credentials"},
		{"UsernameWithoutPassword", "KEYHOLDER_REGISTRY_USERNAME", "robot", "KEYHOLDER_REGISTRY_PASSWORD: is required together"},
		{"PublicHostWithPath", "KEYHOLDER_PUBLIC_HOST", "reg.example/v2", "KEYHOLDER_PUBLIC_HOST:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := base()
			env[tt.key] = tt.value
			_, err := loadConfig(envOf(env))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line starting %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error echoes a secret: %v", err)
			}
		})
	}
}

func TestServeRefusesWithBadConfig(t *testing.T) {
	var stderr bytes.Buffer
	err := keyholdercmd.Command.Run(context.Background(), []string{"serve"}, cli.Env{Getenv: envOf(map[string]string{}), Stdout: &stderr, Stderr: &stderr})
	if err == nil || !strings.HasPrefix(err.Error(), "KEYHOLDER_BOX_URL: is required") {
		t.Errorf("got %v, want the KEYHOLDER_BOX_URL line", err)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		for i, want := range []string{"keyholder: 2 migration(s) applied; schema is current", "keyholder: 0 migration(s) applied; schema is current"} {
			var out bytes.Buffer
			if err := keyholdercmd.Command.Run(context.Background(), []string{"migrate"}, cli.Env{Getenv: envOf(map[string]string{"DATABASE_URL": url}), Stdout: &out, Stderr: &out}); err != nil {
				t.Fatalf("migrate %d: %v", i, err)
			}
			if got := strings.TrimSpace(out.String()); got != want {
				t.Errorf("run %d: got %q, want %q", i, got, want)
			}
		}
	})
}

func TestServeStopsWhenSchemaIsBehind(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := base()
		env["DATABASE_URL"] = sqltest.URL(t, engine)
		env["PORT"] = "0"
		err := keyholdercmd.Command.Run(context.Background(), []string{"serve"}, cli.Env{Getenv: envOf(env), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), "platform keyholder migrate") {
			t.Errorf("got %v, want the migrate command named", err)
		}
	})
}

type readiness struct {
	Status string            `json:"status"`
	Engine string            `json:"engine"`
	Deps   map[string]string `json:"deps"`
}

func ready(t *testing.T, url string) (int, readiness) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("readyz body: %v", err)
	}
	return resp.StatusCode, r
}

// poll waits until cond holds, failing after a deadline.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReadinessNamesEachDependency(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		poll(t, "keyholder ready", func() bool { st, _ := ready(t, p.KeyholderURL); return st == http.StatusOK })
		_, r := ready(t, p.KeyholderURL)
		want := map[string]string{"database": "ok", "box": "ok", "registry": "ok"}
		for k, v := range want {
			if r.Deps[k] != v {
				t.Errorf("deps[%s]: got %q, want %q", k, r.Deps[k], v)
			}
		}
		if r.Engine != string(engine) || r.Status != "ok" {
			t.Errorf("got %+v, want status ok on %s", r, engine)
		}
		p.StopRegistry()
		st, r := ready(t, p.KeyholderURL)
		if st != http.StatusServiceUnavailable || r.Deps["registry"] != "unavailable" || r.Deps["box"] != "ok" || r.Deps["database"] != "ok" {
			t.Errorf("registry down: got %d %+v, want 503 naming the registry alone", st, r)
		}
	})
}

func TestReadinessWhenBoxIsDown(t *testing.T) {
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{BoxURL: "http://127.0.0.1:1"})
	st, r := ready(t, p.KeyholderURL)
	if st != http.StatusServiceUnavailable || r.Deps["box"] != "unavailable" || r.Deps["registry"] != "ok" {
		t.Errorf("got %d %+v, want 503 naming box", st, r)
	}
}

// TestServeDatabaseDownAtStart: keyholder starts with its database down
// (healthz 200, readyz 503 naming the database, /v1 and /v2 503 each in
// its own envelope) and serves by itself once the database answers.
func TestServeDatabaseDownAtStart(t *testing.T) {
	url := sqltest.URL(t, sqldb.Postgres)
	if err := keyholdercmd.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	proxy := sqltest.NewProxy(t, sqltest.Target(t, url))
	proxy.Down.Store(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := keyholdercmd.Config{
		Base: service.Base{DatabaseURL: proxy.URL(t, url), DatabaseTimeout: 500 * time.Millisecond}, BoxURL: "http://127.0.0.1:1",
		RegistryURL: "http://127.0.0.1:1", CredentialTTL: time.Hour, IdentityTimeout: time.Second, PublicHost: "registry.test",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keyholdercmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := call("GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz: %d, want 200", code)
	}
	if st, r := ready(t, base); st != 503 || r.Deps["database"] != "unavailable" {
		t.Errorf("readyz: %d %+v, want 503 naming the database", st, r)
	}
	tests := []struct{ name, method, path, body, want string }{
		{"Exchange", "POST", "/v1/exchange", `{"capability":"x"}`, `{"error":{"code":"unavailable"`},
		{"Registry", "GET", "/v2/", "", `{"errors":[{"code":"UNAVAILABLE"`},
	}
	for _, tt := range tests {
		if code, body := call(tt.method, tt.path, tt.body); code != 503 || !strings.HasPrefix(body, tt.want) {
			t.Errorf("%s with the database down: %d %s, want 503 %s", tt.name, code, body, tt.want)
		}
	}
	proxy.Down.Store(false)
	poll(t, "the database to be ready", func() bool { _, r := ready(t, base); return r.Deps["database"] == "ok" })
	if code, body := call("GET", "/v2/", ""); code != 401 {
		t.Errorf("GET /v2/ once the database answers: %d %s, want the 401 of a request without credentials", code, body)
	}
}
