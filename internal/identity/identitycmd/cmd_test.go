package identitycmd_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const masterKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func load(env map[string]string) (identitycmd.Config, error) {
	var cfg identitycmd.Config
	err := identitycmd.Command.Load(context.Background(), func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

func TestConfig(t *testing.T) {
	cfg, err := load(map[string]string{"PORT": "9001"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := load(map[string]string{"IDENTITY_COURIER_URL": "http://127.0.0.1:4000", "IDENTITY_COURIER_TOKEN": "identity:" + strings.Repeat("s", 32)}); err != nil || ok.CourierURL == "" {
		t.Errorf("a valid courier configuration: %+v, %v", ok, err)
	}
	if cfg.Issuer != "http://localhost:9001" || cfg.DatabaseTimeout != 5*time.Second || cfg.SessionTTL != 12*time.Hour || cfg.LockoutThreshold != 5 {
		t.Errorf("defaults = %+v", cfg)
	}
	bad := []struct {
		name string
		env  map[string]string
	}{
		{"IDENTITY_ISSUER", map[string]string{"IDENTITY_ISSUER": "not-a-url"}},
		{"IDENTITY_ISSUER", map[string]string{"IDENTITY_ISSUER": "/relative"}},
		{"LOG_LEVEL", map[string]string{"LOG_LEVEL": "loud"}},
		{"IDENTITY_MASTER_KEY", map[string]string{"IDENTITY_MASTER_KEY": "c2hvcnQ="}},
		{"IDENTITY_MASTER_KEY", map[string]string{"DATABASE_URL": "sqlite:x.db"}},
		{"DATABASE_TIMEOUT", map[string]string{"DATABASE_TIMEOUT": "soon"}},
		{"DATABASE_URL", map[string]string{"DATABASE_URL": "mysql://x", "IDENTITY_MASTER_KEY": masterKey}},
		{"IDENTITY_LOCKOUT_THRESHOLD", map[string]string{"IDENTITY_LOCKOUT_THRESHOLD": "0"}},
		{"IDENTITY_PUBLIC_URL", map[string]string{"IDENTITY_PUBLIC_URL": "not-a-url"}},
		{"IDENTITY_COURIER_URL", map[string]string{"IDENTITY_COURIER_URL": "not-a-url", "IDENTITY_COURIER_TOKEN": "identity:" + strings.Repeat("s", 32)}},
		{"IDENTITY_COURIER_URL", map[string]string{"IDENTITY_COURIER_TOKEN": "identity:" + strings.Repeat("s", 32)}},
		{"IDENTITY_COURIER_TOKEN", map[string]string{"IDENTITY_COURIER_URL": "http://127.0.0.1:4000"}},
		{"IDENTITY_COURIER_TOKEN", map[string]string{"IDENTITY_COURIER_URL": "http://127.0.0.1:4000", "IDENTITY_COURIER_TOKEN": "identity:c2hvcnQ"}},
		{"IDENTITY_COURIER_TOKEN", map[string]string{"IDENTITY_COURIER_URL": "http://127.0.0.1:4000", "IDENTITY_COURIER_TOKEN": "box:" + strings.Repeat("c2hvcnQ", 6)}},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := load(b.env)
			if err == nil || !strings.HasPrefix(err.Error(), b.name+":") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: error %v, want one line naming %s", b.env, err, b.name)
			}
			if err != nil && strings.Contains(err.Error(), "c2hvcnQ") {
				t.Errorf("the error echoes the master key: %v", err)
			}
		})
	}
}

// TestServeSchemaBehind: identity refuses to serve an unmigrated database
// in one line naming the command to run.
func TestServeSchemaBehind(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := load(map[string]string{"DATABASE_URL": sqltest.URL(t, engine), "IDENTITY_MASTER_KEY": masterKey})
		if err != nil {
			t.Fatal(err)
		}
		err = identitycmd.Serve(context.Background(), cfg, slog.New(slog.DiscardHandler), ln)
		if err == nil || !strings.Contains(err.Error(), "platform identity migrate") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Serve on an unmigrated database = %v, want one line naming `platform identity migrate`", err)
		}
	})
}

// serve migrates databaseURL (through migrateURL when it differs) and runs
// identity on it, returning its base URL.
func serve(t *testing.T, migrateURL, databaseURL string, timeout time.Duration) string {
	t.Helper()
	if err := identitycmd.Migrate(context.Background(), migrateURL); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(map[string]string{"DATABASE_URL": databaseURL, "IDENTITY_MASTER_KEY": masterKey, "DATABASE_TIMEOUT": timeout.String()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- identitycmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeDatabaseDownAtStart: identity starts with its database down
// (healthz 200, readyz 503, routes 503) and serves once it comes.
func TestServeDatabaseDownAtStart(t *testing.T) {
	url := sqltest.URL(t, sqldb.Postgres)
	p := sqltest.NewProxy(t, sqltest.Target(t, url))
	p.Down.Store(true)
	base := serve(t, url, p.URL(t, url), 500*time.Millisecond)
	if code, _ := call(t, "GET", base+"/healthz", ""); code != 200 {
		t.Errorf("healthz: %d, want 200", code)
	}
	if code, body := call(t, "GET", base+"/readyz", ""); code != 503 {
		t.Errorf("readyz: %d %s, want 503", code, body)
	}
	if code, body := call(t, "POST", base+"/v1/session", `{"email":"a@example.com","password":"correct horse battery"}`); code != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("POST /v1/session: %d %s, want 503 unavailable", code, body)
	}
	p.Down.Store(false)
	waitReady(t, base)
	if code, body := call(t, "GET", base+"/.well-known/jwks.json", ""); code != 200 {
		t.Errorf("key set once the database is up: %d %s", code, body)
	}
}

// TestServeDatabaseHangs: with the database hanging mid-session (frozen
// PostgreSQL; SQLite's write lock held by another process), a request is
// answered 503 unavailable within a few DATABASE_TIMEOUTs, never a hang.
func TestServeDatabaseHangs(t *testing.T) {
	const timeout = 300 * time.Millisecond
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		var freeze func()
		base := ""
		if engine == sqldb.Postgres {
			p := sqltest.NewProxy(t, sqltest.Target(t, url))
			base = serve(t, url, p.URL(t, url), timeout)
			freeze = func() { p.Frozen.Store(true) }
		} else {
			base = serve(t, url, url, timeout)
			freeze = func() {
				other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(url, "sqlite:")+"?_txlock=immediate&_pragma=busy_timeout(10000)")
				if err != nil {
					t.Fatal(err)
				}
				tx, err := other.Begin()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tx.Rollback(); other.Close() })
			}
		}
		waitReady(t, base)
		freeze()
		start := time.Now()
		code, body := call(t, "POST", base+"/v1/users", `{"email":"new@example.com","password":"correct horse battery","display_name":"N"}`)
		if code != 503 || !strings.Contains(body, `"unavailable"`) {
			t.Errorf("POST /v1/users with the database hanging: %d %s, want 503 unavailable", code, body)
		}
		if took := time.Since(start); took > 20*timeout {
			t.Errorf("took %v with DATABASE_TIMEOUT %v", took, timeout)
		}
	})
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _ := call(t, "GET", base+"/readyz", ""); code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("identity did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
