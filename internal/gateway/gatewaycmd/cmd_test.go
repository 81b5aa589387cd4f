package gatewaycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	err := NewCommand(nil).Load(context.Background(), getenv, &cfg)
	return cfg, err
}

func TestConfig(t *testing.T) {
	base := map[string]string{"IDENTITY_URL": "http://identity:8081", "BOX_URL": "http://box:8082"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	errTests := []struct {
		name    string
		vars    map[string]string
		wantVar string
	}{
		{"ErrTTLZero", with("IDENTITY_JWKS_TTL_MS", "0"), "IDENTITY_JWKS_TTL_MS"},
		{"ErrTTLNegative", with("IDENTITY_JWKS_TTL_MS", "-5"), "IDENTITY_JWKS_TTL_MS"},
		{"ErrTTLNotANumber", with("IDENTITY_JWKS_TTL_MS", "5m"), "IDENTITY_JWKS_TTL_MS"},
		{"ErrRedisScheme", with("REDIS_URL", "http://127.0.0.1:6379"), "REDIS_URL"},
		{"ErrRedisGarbage", with("REDIS_URL", "::not a url"), "REDIS_URL"},
		{"ErrRedisBadDB", with("REDIS_URL", "redis://127.0.0.1:6379/notadb"), "REDIS_URL"},
		{"ErrTrustedProxiesNegative", with("TRUSTED_PROXIES", "-1"), "TRUSTED_PROXIES"},
		{"ErrTrustedProxiesNotAnAddress", with("TRUSTED_PROXIES", "127.0.0.1, parlor"), "TRUSTED_PROXIES"},
		{"ErrRateLimitZero", with("GATEWAY_RATE_LIMIT", "0"), "GATEWAY_RATE_LIMIT"},
		{"ErrPort", with("PORT", "99999"), "PORT"},
		{"ErrDebugAddrPublic", with("DEBUG_ADDR", "192.0.2.1:6060"), "DEBUG_ADDR"},
		{"ErrIdentityURL", with("IDENTITY_URL", "identity:8081"), "IDENTITY_URL"},
		{"ErrCourierURL", with("COURIER_URL", "courier:4000"), "COURIER_URL"},
		{"ErrKeyholderURL", with("KEYHOLDER_URL", "not a url"), "KEYHOLDER_URL"},
		{"ErrParlorURL", with("PARLOR_URL", "ftp://parlor"), "PARLOR_URL"},
		{"ErrIssuer", with("IDENTITY_ISSUER", "not a url"), "IDENTITY_ISSUER"},
		{"ErrNoIssuer", map[string]string{"BOX_URL": "http://box"}, "IDENTITY_ISSUER"},
		{"ErrNoUpstream", map[string]string{"IDENTITY_ISSUER": "http://identity"}, "IDENTITY_URL"},
		{"ErrOrigin", with("GATEWAY_ALLOWED_ORIGINS", "https://app.example.com/path"), "GATEWAY_ALLOWED_ORIGINS"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(env(tt.vars))
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantVar+":") {
				t.Fatalf("err = %v, want one naming %s", err, tt.wantVar)
			}
		})
	}
	t.Run("ErrRedisPasswordNotEchoed", func(t *testing.T) {
		_, err := loadConfig(env(with("REDIS_URL", "redis://:hunter2@host:6379/x")))
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("err = %v, want a refusal that does not echo the password", err)
		}
	})

	t.Run("OKDefaults", func(t *testing.T) {
		cfg, err := loadConfig(env(base))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Port != 8080 || cfg.JWKSTTL != 300*time.Second || cfg.TrustedProxies != 0 || cfg.RateLimit != 600 ||
			cfg.IdentityIssuer != "http://identity:8081" || cfg.RedisURL != "" || len(cfg.AllowedOrigins) != 0 {
			t.Fatalf("defaults = %+v", cfg)
		}
	})
	t.Run("OKAllSet", func(t *testing.T) {
		cfg, err := loadConfig(env(map[string]string{
			"PORT": "9000", "IDENTITY_URL": "http://identity:8081", "IDENTITY_ISSUER": "https://id.example.com",
			"IDENTITY_JWKS_TTL_MS": "1500", "BOX_URL": "http://box:8082", "REDIS_URL": "redis://:pw@127.0.0.1:6379/2",
			"TRUSTED_PROXIES": "1", "GATEWAY_RATE_LIMIT": "60", "GATEWAY_ALLOWED_ORIGINS": "https://App.example.com, http://localhost:3000",
			"COURIER_URL": "http://courier:4000", "KEYHOLDER_URL": "http://keyholder:8084", "PARLOR_URL": "http://parlor:3000",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Port != 9000 || cfg.JWKSTTL != 1500*time.Millisecond || cfg.IdentityIssuer != "https://id.example.com" ||
			cfg.TrustedProxies != 1 || cfg.RateLimit != 60 || cfg.RedisURL == "" ||
			strings.Join(cfg.AllowedOrigins, ",") != "https://app.example.com,http://localhost:3000" ||
			cfg.CourierURL != "http://courier:4000" || cfg.KeyholderURL != "http://keyholder:8084" || cfg.ParlorURL != "http://parlor:3000" {
			t.Fatalf("config = %+v", cfg)
		}
	})
	t.Run("OKTrustedAddresses", func(t *testing.T) {
		cfg, err := loadConfig(env(with("TRUSTED_PROXIES", "127.0.0.1, ::1, 10.1.0.0/16")))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range cfg.TrustedNets {
			got = append(got, p.String())
		}
		if want := "127.0.0.1/32 ::1/128 10.1.0.0/16"; strings.Join(got, " ") != want || cfg.TrustedProxies != 0 {
			t.Fatalf("trusted = %v (count %d), want %s", got, cfg.TrustedProxies, want)
		}
	})
	t.Run("OKOnlyBox", func(t *testing.T) {
		if _, err := loadConfig(env(map[string]string{"BOX_URL": "http://box", "IDENTITY_ISSUER": "http://identity"})); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRunRefusesBadConfig(t *testing.T) {
	var stderr bytes.Buffer
	err := NewCommand(nil).Run(context.Background(), []string{"serve"}, cli.Env{
		Getenv: env(map[string]string{"IDENTITY_URL": "http://identity", "IDENTITY_JWKS_TTL_MS": "soon"}),
		Stdout: io.Discard, Stderr: &stderr,
	})
	if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), "IDENTITY_JWKS_TTL_MS") {
		t.Fatalf("Run = %v (exit %d), want exit 1 naming IDENTITY_JWKS_TTL_MS", err, cli.ExitCode(err))
	}
	for _, args := range [][]string{nil, {"bogus"}, {"serve", "extra"}} {
		if err := NewCommand(nil).Run(context.Background(), args, cli.Env{Getenv: env(nil), Stdout: io.Discard, Stderr: io.Discard}); cli.ExitCode(err) != 2 {
			t.Errorf("Run(%v) exit = %d, want 2", args, cli.ExitCode(err))
		}
	}
}

// TestServe runs the real server on a loopback port in front of a fake
// identity, and stops it by cancelling its context.
func TestServe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"me"}`))
	})
	ks := tokenstest.NewKeyServer(t, mux)
	vars := map[string]string{"IDENTITY_URL": ks.URL, "IDENTITY_JWKS_TTL_MS": "60000"}
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		vars["REDIS_URL"] = u
	}
	cfg, err := loadConfig(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RedisKeyPrefix = "test:gatewaycmd:" + time.Now().Format("150405.000000") + ":"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	base := "http://" + ln.Addr().String()

	testutil.Eventually(t, 10*time.Second, "the gateway to be ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		var body struct{ Deps map[string]string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
		if _, ok := body.Deps["redis"]; ok != (vars["REDIS_URL"] != "") {
			t.Fatalf("/readyz deps = %v; redis listed must follow REDIS_URL", body.Deps)
		}
		return true
	})

	req, _ := http.NewRequest("GET", base+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+ks.Token(t, "k1", ks.Claims("u1", time.Minute)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != `{"id":"me"}` {
		t.Fatalf("GET /v1/me = %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("RateLimit-Limit") != "600" {
		t.Errorf("RateLimit-Limit = %q, want 600", resp.Header.Get("RateLimit-Limit"))
	}

	// An oversized header is the gateway's 431 in the route's envelope,
	// not the server's text/plain.
	req, _ = http.NewRequest("GET", base+"/v1/me", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" ||
		p.Code != "headers_too_large" {
		t.Errorf("oversized header = %d %s %q, want 431 problem+json headers_too_large",
			resp.StatusCode, resp.Header.Get("Content-Type"), p.Code)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

// TestRedisLoggerIsSlog: the Redis client's own notices come out as slog
// JSON lines, not plain text.
func TestRedisLoggerIsSlog(t *testing.T) {
	var buf bytes.Buffer
	l := redisLogger{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts", 5)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line %q is not JSON: %v", buf.String(), err)
	}
	if line["msg"] != "redis: connection pool: failed to dial after 5 attempts" || line["component"] != "redis" || line["level"] != "WARN" {
		t.Fatalf("log line = %v", line)
	}
}
