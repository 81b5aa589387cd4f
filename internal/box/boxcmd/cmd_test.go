package boxcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func load(env map[string]string) (boxcmd.Config, error) {
	var cfg boxcmd.Config
	err := boxcmd.Command.Load(context.Background(), getenv(env), &cfg)
	return cfg, err
}

func TestConfig(t *testing.T) {
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 8082 || cfg.IdentityTimeout != 2*time.Second || cfg.CapabilityTTL != 5*time.Minute || cfg.DatabaseURL != "" || cfg.IdentityURL != "" || cfg.DatabaseTimeout != 5*time.Second {
		t.Errorf("defaults = %+v", cfg)
	}
	cfg, err = load(map[string]string{
		"PORT": "9000", "DATABASE_URL": "sqlite:x.db", "BOX_IDENTITY_URL": "http://identity:8081/",
		"BOX_IDENTITY_TIMEOUT": "750ms", "BOX_CAPABILITY_TTL": "90s", "DATABASE_TIMEOUT": "2s", "BOX_MASTER_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
	})
	if err != nil || cfg.Port != 9000 || cfg.IdentityURL != "http://identity:8081" || cfg.IdentityTimeout != 750*time.Millisecond || cfg.CapabilityTTL != 90*time.Second || cfg.DatabaseTimeout != 2*time.Second {
		t.Errorf("Load = %+v, %v", cfg, err)
	}
	bad := []struct{ name, value string }{
		{"PORT", "http"},
		{"DATABASE_URL", "mysql://x"},
		{"DATABASE_TIMEOUT", "5"},
		{"BOX_IDENTITY_URL", "identity:8081"},
		{"BOX_IDENTITY_TIMEOUT", "2"},
		{"BOX_IDENTITY_TIMEOUT", "-1s"},
		{"BOX_CAPABILITY_TTL", "forever"},
		{"DEBUG_ADDR", ":6060"},
		{"LOG_LEVEL", "loud"},
	}
	for _, b := range bad {
		_, err := load(map[string]string{b.name: b.value})
		if err == nil || !strings.HasPrefix(err.Error(), b.name+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%q: error %v, want one line naming the variable", b.name, b.value, err)
		}
	}
	// BOX_MASTER_KEY seals stored replays: required with a database, and
	// exactly 32 bytes.
	for _, key := range []string{"", "c2hvcnQ=", "not base64!"} {
		_, err := load(map[string]string{"DATABASE_URL": "sqlite:x.db", "BOX_MASTER_KEY": key})
		if err == nil || !strings.HasPrefix(err.Error(), "BOX_MASTER_KEY:") || strings.Contains(err.Error(), "\n") {
			t.Errorf("BOX_MASTER_KEY=%q: error %v, want one line naming the variable", key, err)
		}
	}
}

// serve runs boxcmd.Serve on a free port and returns its base URL.
func serve(t *testing.T, cfg boxcmd.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- boxcmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

func TestServeWithoutDatabase(t *testing.T) {
	base := serve(t, boxcmd.Config{IdentityTimeout: time.Second})
	if code, body := get(t, base+"/readyz"); code != 200 || body != `{"deps":"none","status":"ok"}` {
		t.Errorf("readyz: %d %s", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	for _, p := range []string{"/v1/operator/entitlements", "/v1/accounts/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa/entitlements"} {
		if code, body := get(t, base+p); code != 404 || !strings.Contains(body, `"not_found"`) {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
}

// TestServeSchemaBehind: box refuses to serve an unmigrated database, in
// one line naming the command to run.
func TestServeSchemaBehind(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = boxcmd.Serve(context.Background(), boxcmd.Config{Base: service.Base{DatabaseURL: sqltest.URL(t, engine)}, IdentityTimeout: time.Second, MasterKey: make([]byte, 32)}, slog.New(slog.DiscardHandler), ln)
		if err == nil || !strings.Contains(err.Error(), "platform box migrate") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Serve on an unmigrated database = %v, want one line naming `platform box migrate`", err)
		}
	})
}

func TestServeReadiness(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		if err := boxcmd.Migrate(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		base := serve(t, boxcmd.Config{Base: service.Base{DatabaseURL: url, DatabaseTimeout: time.Second}, IdentityTimeout: time.Second, MasterKey: make([]byte, 32)})
		want := `{"deps":"` + string(engine) + `","status":"ok"}`
		if code, body := get(t, base+"/readyz"); code != 200 || body != want {
			t.Errorf("readyz: %d %s, want 200 %s", code, body, want)
		}
		// No identity configured: authorized calls fail closed.
		if code, body := get(t, base+"/v1/operator/entitlements"); code != 401 {
			t.Errorf("list without token: %d %s", code, body)
		}
	})
}

// TestServeDatabaseDownAtStart: a database that does not answer when box
// starts leaves it alive (healthz 200), not ready (readyz 503, routes 503
// unavailable), until the database comes: then it serves by itself.
func TestServeDatabaseDownAtStart(t *testing.T) {
	url := sqltest.URL(t, sqldb.Postgres)
	if err := boxcmd.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	p := sqltest.NewProxy(t, sqltest.Target(t, url))
	p.Down.Store(true)
	base := serve(t, boxcmd.Config{Base: service.Base{DatabaseURL: p.URL(t, url), DatabaseTimeout: 500 * time.Millisecond}, IdentityTimeout: time.Second, MasterKey: make([]byte, 32)})
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("healthz with the database down: %d, want 200", code)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || body != `{"deps":"postgres","status":"unavailable"}` {
		t.Errorf("readyz with the database down: %d %s", code, body)
	}
	if code, body := get(t, base+"/v1/operator/entitlements"); code != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Errorf("a route with the database down: %d %s, want 503 unavailable", code, body)
	}
	p.Down.Store(false)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, _ := get(t, base+"/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("box did not become ready after the database came up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get(t, base+"/v1/operator/entitlements"); code != 401 {
		t.Errorf("a route once the database is up: %d %s, want the 401 of a request without a token", code, body)
	}
}

func TestMigrateCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	env := cli.Env{Getenv: getenv(map[string]string{"DATABASE_URL": sqltest.URL(t, sqldb.SQLite)}), Stdout: &out, Stderr: &errOut}
	if err := boxcmd.Command.Run(context.Background(), []string{"migrate"}, env); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "migration(s)") || strings.Contains(out.String(), ": 0 migration(s)") {
		t.Errorf("stdout %q", out.String())
	}
	out.Reset()
	if err := boxcmd.Command.Run(context.Background(), []string{"migrate"}, env); err != nil || !strings.Contains(out.String(), ": 0 migration(s)") {
		t.Errorf("second migrate: %v %q", err, out.String())
	}
	env.Getenv = getenv(nil)
	if err := boxcmd.Command.Run(context.Background(), []string{"migrate"}, env); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("migrate without DATABASE_URL: %v", err)
	}
	if err := boxcmd.Command.Run(context.Background(), []string{"frobnicate"}, env); !cli.IsUsage(err) {
		t.Errorf("unknown subcommand: %v, want a usage error", err)
	}
}

// fakeBox answers the operator API as box does, recording requests.
type fakeBox struct {
	t        *testing.T
	requests []string
}

func (f *fakeBox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+" "+string(body))
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer staff-token" {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"code":"unauthenticated","message":"valid bearer token required"}}`)
		return
	}
	row := func(id int, status string) string {
		return `{"id":` + string(rune('0'+id)) + `,"account_id":"acct","product":"platform","status":"` + status + `"}`
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/operator/entitlements":
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		if in["reference"] == "dup" {
			w.WriteHeader(409)
			io.WriteString(w, `{"entitlement":`+row(1, "active")+`,"duplicate":true}`)
			return
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"entitlement":`+row(2, "active")+`}`)
	case r.Method == "POST" && r.URL.Path == "/v1/operator/entitlements/2/revoke":
		io.WriteString(w, `{"entitlement":`+row(2, "revoked")+`}`)
	case r.Method == "POST":
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"not_found","message":"not found"}}`)
	case r.URL.Query().Get("cursor") == "":
		io.WriteString(w, `{"entitlements":[`+row(3, "active")+`,`+row(2, "revoked")+`],"next_cursor":"c2"}`)
	default:
		io.WriteString(w, `{"entitlements":[`+row(1, "active")+`],"next_cursor":null}`)
	}
}

func TestOperatorCommands(t *testing.T) {
	fb := &fakeBox{t: t}
	srv := httptest.NewServer(fb)
	defer srv.Close()
	run := func(token string, args ...string) (string, error) {
		var out bytes.Buffer
		env := cli.Env{Getenv: getenv(map[string]string{"BOX_URL": srv.URL, "PLATFORM_TOKEN": token}), Stdout: &out, Stderr: io.Discard}
		err := boxcmd.Command.Run(context.Background(), args, env)
		return out.String(), err
	}

	out, err := run("staff-token", "grant", "--account", "acct", "--product", "platform", "--range", "^1.0.0",
		"--source", "reconciled_payment", "--reference", "pi_1", "--max-installations", "5")
	if err != nil || !strings.Contains(out, `"id": 2`) {
		t.Errorf("grant: %v %q", err, out)
	}
	last := fb.requests[len(fb.requests)-1]
	for _, want := range []string{`"account_id":"acct"`, `"product":"platform"`, `"version_range":"^1.0.0"`, `"source":"reconciled_payment"`, `"reference":"pi_1"`, `"max_installations":5`} {
		if !strings.Contains(last, want) {
			t.Errorf("grant request %q lacks %s", last, want)
		}
	}

	out, err = run("staff-token", "grant", "--account", "acct", "--product", "platform", "--reference", "dup")
	if err == nil || !strings.Contains(err.Error(), "already holds an active platform entitlement (id 1") || !strings.Contains(out, `"id": 1`) {
		t.Errorf("duplicate grant: %v %q", err, out)
	}

	if _, err := run("staff-token", "grant", "--account", "acct", "--product", "kit", "--max-installations", "-1"); !cli.IsUsage(err) {
		t.Errorf("grant with a negative limit: %v, want a usage error", err)
	}
	if _, err := run("staff-token", "grant", "--account", "acct"); !cli.IsUsage(err) {
		t.Errorf("grant without --product: %v, want a usage error", err)
	}
	if _, err := run("", "grant", "--account", "acct", "--product", "kit"); err == nil || !strings.Contains(err.Error(), "PLATFORM_TOKEN") {
		t.Errorf("grant without PLATFORM_TOKEN: %v", err)
	}
	if _, err := run("wrong", "grant", "--account", "acct", "--product", "kit"); err == nil || !strings.Contains(err.Error(), "401 unauthenticated") {
		t.Errorf("grant with a refused token: %v", err)
	}

	out, err = run("staff-token", "revoke", "2")
	if err != nil || !strings.Contains(out, `"status": "revoked"`) {
		t.Errorf("revoke: %v %q", err, out)
	}
	if _, err := run("staff-token", "revoke", "9"); err == nil || !strings.Contains(err.Error(), "404 not_found") {
		t.Errorf("revoke unknown: %v", err)
	}

	out, err = run("staff-token", "list", "--account", "acct")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 3 {
		t.Errorf("list: %v %q, want three rows over two pages", err, out)
	}
}

// TestServePurgesIdempotencyKeys: box's Idempotency-Key records past the
// retention window are deleted once its database opens (service.App's
// purge), and those within it are kept.
func TestServePurgesIdempotencyKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		url := sqltest.URL(t, engine)
		if err := boxcmd.Migrate(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		db, err := sqldb.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx := context.Background()
		now := time.Now().UTC()
		for _, r := range []struct {
			key string
			at  time.Time
		}{{"expired", now.Add(-idempotency.Retention - time.Hour)}, {"recent", now.Add(-time.Minute)}} {
			if err := db.InTx(ctx, func(tx *sqldb.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (scope, key_digest, fingerprint, created_at) VALUES ($1, $2, $3, $4)`,
					"test", r.key, "f", r.at)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		serve(t, boxcmd.Config{Base: service.Base{DatabaseURL: url, DatabaseTimeout: time.Second}, IdentityTimeout: time.Second, MasterKey: make([]byte, 32)})
		keys := func() []string {
			rows, err := db.QueryContext(ctx, `SELECT key_digest FROM idempotency_keys ORDER BY key_digest`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				got = append(got, k)
			}
			return got
		}
		deadline := time.Now().Add(10 * time.Second)
		for got := keys(); len(got) != 1 || got[0] != "recent"; got = keys() {
			if time.Now().After(deadline) {
				t.Fatalf("idempotency_keys = %v, want only [recent] once box serves", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
