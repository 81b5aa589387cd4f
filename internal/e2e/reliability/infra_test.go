//go:build e2e

// Package reliability proves the platform's promises against the real
// binary under faults: each test owns its PostgreSQL cluster, NATS server
// and Redis (started here from the machine's binaries, on free ports, in
// temporary directories), so stopping one never disturbs the other tests
// sharing the machine. A test skips when a binary it needs is missing.
package reliability

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/testutil"
)

func tcpOpen(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// daemon is a NATS or Redis server run by the test: stopped and started
// again on the same port and storage directory.
type daemon struct {
	name string
	path string
	args []string
	port int
	logs *logtest.Buffer
	cmd  *exec.Cmd
	done chan struct{}
}

func (d *daemon) start(t testing.TB) {
	t.Helper()
	d.cmd = exec.Command(d.path, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", d.name, err)
	}
	d.done = make(chan struct{})
	cmd, done := d.cmd, d.done
	go func() { _ = cmd.Wait(); close(done) }()
	testutil.Eventually(t, 15*time.Second, d.name+" to listen", func() bool {
		select {
		case <-done:
			t.Fatalf("%s exited:\n%s", d.name, d.logs.String())
		default:
		}
		return tcpOpen(d.port)
	})
}

// stop ends the server with sig and waits until it has exited.
func (d *daemon) stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

func lookBinary(t testing.TB, name string, extra ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range extra {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Skipf("%s is not installed: this fault test needs its own %s server", name, name)
	return ""
}

// startNATS runs a private nats-server with JetStream.
func startNATS(t testing.TB) *daemon {
	t.Helper()
	path := lookBinary(t, "nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server")
	port := e2e.FreePort(t)
	d := &daemon{name: "nats-server", path: path, port: port, logs: &logtest.Buffer{},
		args: []string{"-js", "-sd", t.TempDir(), "-p", strconv.Itoa(port), "-a", "127.0.0.1"}}
	d.start(t)
	t.Cleanup(func() { d.stop(t, syscall.SIGTERM) })
	return d
}

func (d *daemon) natsURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", d.port) }

// startRedis runs a private redis-server that keeps nothing on disk.
func startRedis(t testing.TB) *daemon {
	t.Helper()
	path := lookBinary(t, "redis-server", "/usr/bin/redis-server")
	port := e2e.FreePort(t)
	d := &daemon{name: "redis-server", path: path, port: port, logs: &logtest.Buffer{},
		args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}}
	d.start(t)
	t.Cleanup(func() { d.stop(t, syscall.SIGTERM) })
	return d
}

func (d *daemon) redisURL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", d.port) }

// pgCluster is a private PostgreSQL cluster (initdb + pg_ctl). As root it
// runs as the postgres user, since PostgreSQL refuses to run as root.
type pgCluster struct {
	bin  string
	dir  string
	port int
	cred *syscall.Credential
}

func startPostgres(t testing.TB) *pgCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(matches)
	var bin string
	if len(matches) > 0 {
		bin = filepath.Dir(matches[len(matches)-1])
	} else if p, err := exec.LookPath("initdb"); err == nil {
		bin = filepath.Dir(p)
	} else {
		t.Skip("initdb is not installed: this fault test needs its own PostgreSQL cluster")
	}
	dir, err := os.MkdirTemp("", "reliability-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &pgCluster{bin: bin, dir: dir, port: e2e.FreePort(t)}
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user: initdb refuses root")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.run(t, "initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-N")
	c.start(t)
	t.Cleanup(func() { c.stop(t, "fast") })
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

func (c *pgCluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// start starts the cluster and waits until it accepts connections.
func (c *pgCluster) start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300", c.port, c.dir)
	c.run(t, "pg_ctl", "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "start")
}

// stop stops the cluster; mode "immediate" is a crash (no checkpoint: the
// restart replays the write-ahead log).
func (c *pgCluster) stop(t testing.TB, mode string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err != nil {
		return
	}
	c.run(t, "pg_ctl", "-D", c.data(), "-m", mode, "-w", "-t", "60", "stop")
}

// url is the address of database name.
func (c *pgCluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// createDB creates database name and returns its DATABASE_URL.
func (c *pgCluster) createDB(t testing.TB, name string) string {
	t.Helper()
	db := openDB(t, c.url("postgres"))
	if _, err := db.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	db.Close()
	return c.url(name)
}

func openDB(t testing.TB, rawURL string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), rawURL)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t testing.TB, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// faultMode is what the fault proxy does with a request.
type faultMode struct {
	// delay holds each request this long (bounded by the caller's
	// patience) before passing it on.
	delay time.Duration
	// status and body, when status is non-zero, are answered instead of
	// passing the request on.
	status int
	body   string
	// drop closes the connection without an answer.
	drop bool
}

// faultProxy stands between box and identity and misbehaves on demand.
type faultProxy struct {
	URL      string
	mode     atomic.Pointer[faultMode]
	inflight atomic.Int64
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	p.mode.Store(&faultMode{})
	rp := httputil.NewSingleHostReverseProxy(u)
	// No pooled upstream connections: one left over from an identity that
	// has since restarted would make the proxy, not box, fail a call.
	rp.Transport = &http.Transport{DisableKeepAlives: true}
	// An unreachable identity is a dropped connection for box, not a 502
	// made up by the proxy.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { hijackClose(w) }
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.inflight.Add(1)
		defer p.inflight.Add(-1)
		m := p.mode.Load()
		if m.delay > 0 {
			select {
			case <-time.After(m.delay):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case m.drop:
			hijackClose(w)
		case m.status != 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(m.status)
			_, _ = w.Write([]byte(m.body))
		default:
			rp.ServeHTTP(w, r)
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.URL = "http://" + ln.Addr().String()
	return p
}

func (p *faultProxy) set(m faultMode) { p.mode.Store(&m) }

func hijackClose(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	w.WriteHeader(http.StatusBadGateway)
}
