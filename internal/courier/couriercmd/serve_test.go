package couriercmd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serve runs Serve on a loopback port with env (over baseEnv, with the
// local adapter) and returns its base URL; it stops with the test.
func serve(t *testing.T, env map[string]string) string {
	t.Helper()
	all := baseEnv()
	all["COURIER_ENV"], all["COURIER_MAIL_ADAPTER"], all["COURIER_LOCAL_DIR"] = "development", "local", t.TempDir()
	for k, v := range env {
		all[k] = v
	}
	cfg, err := loadConfig(envOf(all))
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, discard(), ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func migrated(t *testing.T, engine sqldb.Engine) string {
	t.Helper()
	u := sqltest.URL(t, engine)
	if err := Migrate(context.Background(), u); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return u
}

func probe(t *testing.T, url string) (int, map[string]string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return res.StatusCode, body
}

func TestServeProbes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		base := serve(t, map[string]string{"DATABASE_URL": migrated(t, engine)})
		if status, body := probe(t, base+"/healthz"); status != 200 || body["status"] != "ok" {
			t.Errorf("healthz = %d %v, want 200 ok", status, body)
		}
		if status, body := probe(t, base+"/readyz"); status != 200 || body["status"] != "ok" || body["deps"] != string(engine) {
			t.Errorf("readyz = %d %v, want 200 {ok, %s}", status, body, engine)
		}
	})
}

func TestServeRefusesASchemaBehind(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := baseEnv()
		env["DATABASE_URL"] = sqltest.URL(t, engine)
		cfg, err := loadConfig(envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = Serve(context.Background(), cfg, discard(), ln)
		if err == nil || !strings.Contains(err.Error(), "platform courier migrate") {
			t.Errorf("Serve = %v, want an error naming `platform courier migrate`", err)
		}
	})
}

// silentProxy forwards TCP to target until Silence, after which it keeps
// every connection open and answers nothing: a database host that went
// away without closing anything.
type silentProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	silent bool
	conns  []net.Conn
}

func newSilentProxy(t *testing.T, target string) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p
}

func (p *silentProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		silent := p.silent
		p.mu.Unlock()
		if silent {
			go io.Copy(io.Discard, c)
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies until silenced, then swallows what src sends.
func (p *silentProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		silent := p.silent
		p.mu.Unlock()
		if silent {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (p *silentProxy) Silence() {
	p.mu.Lock()
	p.silent = true
	p.mu.Unlock()
}

func TestReadinessUnavailableWithinOneSecondOfTheDatabaseGoingSilent(t *testing.T) {
	if len(sqltest.Engines()) < 2 {
		t.Skip("TEST_DATABASE_URL not set: the silent database is a PostgreSQL server behind a proxy")
	}
	direct := migrated(t, sqldb.Postgres)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newSilentProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	base := serve(t, map[string]string{"DATABASE_URL": u.String()})
	if status, _ := probe(t, base+"/readyz"); status != 200 {
		t.Fatalf("readyz before = %d, want 200", status)
	}
	proxy.Silence()
	for range 3 {
		start := time.Now()
		status, body := probe(t, base+"/readyz")
		if took := time.Since(start); took >= time.Second {
			t.Errorf("readyz took %v with the database silent, want under 1s", took)
		}
		if status != 503 || body["status"] != "unavailable" || body["deps"] != "postgres" {
			t.Errorf("readyz = %d %v, want 503 {unavailable, postgres}", status, body)
		}
	}
}

// TestServeDatabaseDownAtStart: courier starts with its database down
// (healthz 200, readyz 503, /v1 503 unavailable in problem+json) and
// serves by itself once the database answers.
func TestServeDatabaseDownAtStart(t *testing.T) {
	direct := migrated(t, sqldb.Postgres)
	proxy := sqltest.NewProxy(t, sqltest.Target(t, direct))
	proxy.Down.Store(true)
	base := serve(t, map[string]string{"DATABASE_URL": proxy.URL(t, direct), "DATABASE_TIMEOUT": "500ms"})
	if res, err := http.Get(base + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz with the database down: %v %v, want 200", res, err)
	}
	if status, body := probe(t, base+"/readyz"); status != 503 || body["status"] != "unavailable" {
		t.Errorf("readyz with the database down: %d %v, want 503 unavailable", status, body)
	}
	send := func() (int, string) {
		t.Helper()
		res, err := http.Post(base+"/v1/emails", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := send(); status != 503 || !strings.Contains(body, `"code":"unavailable"`) {
		t.Errorf("POST /v1/emails with the database down: %d %s, want 503 unavailable", status, body)
	}
	proxy.Down.Store(false)
	testutil.Eventually(t, 15*time.Second, "courier ready once the database answers", func() bool {
		status, _ := probe(t, base+"/readyz")
		return status == 200
	})
	if status, body := send(); status != 401 {
		t.Errorf("POST /v1/emails once the database answers: %d %s, want the 401 of a call without a service token", status, body)
	}
}
