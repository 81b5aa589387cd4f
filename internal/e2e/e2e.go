// Package e2e starts the real platform binary for end-to-end tests: it
// builds it once per test process, runs services as subprocesses on free
// loopback ports, waits for them to answer, and keeps their logs (which
// tests inspect, for example to prove no secret was logged).
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/platformco/platform/internal/logtest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds ./cmd/platform once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	buildOnce.Do(func() {
		// PLATFORM_E2E_BINARY runs a binary built beforehand (a CI
		// artifact, or a snapshot while the tree is being edited).
		if prebuilt := os.Getenv("PLATFORM_E2E_BINARY"); prebuilt != "" {
			binPath = prebuilt
			return
		}
		dir, err := os.MkdirTemp("", "platform-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "platform")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/platform")
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MasterKey returns a fresh IDENTITY_MASTER_KEY value.
func MasterKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Env is a command's environment, on top of PATH and HOME.
type Env map[string]string

func (e Env) list() []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

// Run runs the binary to completion and returns its stdout, stderr and
// exit status.
func Run(t testing.TB, env Env, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Env = env.list()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		code = exitErr.ExitCode()
	}
	return o.String(), e.String(), code
}

// MustRun is Run that fails the test on a non-zero exit.
func MustRun(t testing.TB, env Env, args ...string) string {
	t.Helper()
	out, errOut, code := Run(t, env, args...)
	if code != 0 {
		t.Fatalf("platform %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// Proc is a running service.
type Proc struct {
	URL  string
	cmd  *exec.Cmd
	logs *logtest.Buffer
	done chan struct{}
}

// Start runs the binary with args as a service listening on a free port
// (PORT is set), waits until /healthz answers, and stops it with SIGTERM
// when the test ends.
func Start(t testing.TB, env Env, args ...string) *Proc {
	t.Helper()
	port := FreePort(t)
	all := Env{"PORT": strconv.Itoa(port)}
	for k, v := range env {
		all[k] = v
	}
	p := StartOn(t, port, all, args...)
	return p
}

// StartOn is Start with a chosen port (env must set it as the service
// expects).
func StartOn(t testing.TB, port int, env Env, args ...string) *Proc {
	t.Helper()
	p := Spawn(t, env, args...)
	p.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("platform %s exited early:\n%s", strings.Join(args, " "), p.Logs())
		default:
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("platform %s did not answer /healthz:\n%s", strings.Join(args, " "), p.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Spawn runs the binary with args as a background process that serves no
// probe (a publisher loop, say): it does not wait for anything, and it is
// stopped with SIGTERM when the test ends.
func Spawn(t testing.TB, env Env, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = env.list()
	logs := &logtest.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Logs returns everything the process wrote so far.
func (p *Proc) Logs() string { return p.logs.String() }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) { _ = p.cmd.Process.Signal(sig) }

// Wait waits for the process to exit, up to d; it reports whether it did.
func (p *Proc) Wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// ExitCode is the exit status after the process ended.
func (p *Proc) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Stop ends the process with SIGTERM (SIGKILL after 20 s).
func (p *Proc) Stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.Wait(20 * time.Second) {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Client is a small JSON client for end-to-end tests.
type Client struct {
	Base  string
	Token string
}

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map (or fails the test).
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("decode %q: %v", r.Body, err)
	}
	return m
}

// ErrorCode returns the code of an error answer in either envelope the
// services use: box's {"error":{"code","message"}} or identity's
// problem+json "code". It is "" when the body carries neither.
func (r Response) ErrorCode() string {
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		Code string `json:"code"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return ""
	}
	if body.Error.Code != "" {
		return body.Error.Code
	}
	return body.Code
}

// Do sends method path with body (JSON-encoded unless nil) and returns the
// answer.
func (c Client) Do(t testing.TB, method, path string, body any) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Expect fails the test unless the answer has status.
func (r Response) Expect(t testing.TB, status int) Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	return r
}
