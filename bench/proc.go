package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// buildPlatform builds ./cmd/platform into dir, from the module root (the
// directory `go run ./bench` is started in).
func buildPlatform(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "platform")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/platform")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/platform: %v\n%s", err, out)
	}
	return bin, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func masterKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// service is one process the harness started: a platform service, or the
// harness itself re-executed as the bare baseline server.
type service struct {
	Name string
	URL  string
	Port int
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func baseEnv(extra map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// runOnce runs a platform command to completion (migrate, staff add).
func runOnce(ctx context.Context, bin string, env map[string]string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = baseEnv(env)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("platform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// startService starts bin with args on port (env must carry PORT), writes
// its output to logPath, and waits until /healthz answers 200 (and /readyz
// when it has one that answers).
func startService(ctx context.Context, name string, port int, logPath, bin string, env map[string]string, args ...string) (*service, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = baseEnv(env)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &service{Name: name, Port: port, URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, log: lf, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.done:
			lf.Close()
			return nil, fmt.Errorf("%s exited at start; see %s", name, logPath)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		if ok := probe(s.URL + "/healthz"); ok {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not answer /healthz within 30s; see %s", name, logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// migrated makes a fresh database for the service name, applies its
// migrations, and picks a free port for it; drop removes the database.
func (b *bench) migrated(ctx context.Context, name string) (dbURL string, drop func(), port int, err error) {
	if dbURL, drop, err = freshDatabase(ctx, b.cfg, filepath.Join(b.dir, name+".db"), name); err != nil {
		return "", nil, 0, err
	}
	if err = runOnce(ctx, b.p.bin, map[string]string{"DATABASE_URL": dbURL}, name, "migrate"); err == nil {
		port, err = freePort()
	}
	if err != nil {
		drop()
		return "", nil, 0, err
	}
	return dbURL, drop, port, nil
}

// startReady starts a service as startService does and then waits until
// its /readyz answers 200 (its database and loops are up), stopping it
// when that takes more than 30 seconds.
func startReady(ctx context.Context, name string, port int, logPath, bin string, env map[string]string, args ...string) (*service, error) {
	s, err := startService(ctx, name, port, logPath, bin, env, args...)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for !probe(s.URL + "/readyz") {
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready within 30s; see %s", name, logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s, nil
}

func probe(url string) bool {
	c := http.Client{Timeout: time.Second}
	res, err := c.Get(url)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// stop ends the process with SIGTERM, then SIGKILL after 20 s.
func (s *service) stop() {
	if s == nil {
		return
	}
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	s.log.Close()
}

func (s *service) pid() int { return s.cmd.Process.Pid }

// memory is a process's resident set, from /proc/PID/status.
type memory struct {
	RSS  int64 // VmRSS, bytes
	Peak int64 // VmHWM, bytes: the peak since start or the last resetPeak
	// File is RssFile, bytes: the part of RSS that is pages of files
	// mapped in, here nearly all the platform binary's own code and
	// data, shared by every process started from it and reclaimable.
	File int64
}

func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		field := func(prefix string) (int64, bool) {
			if !strings.HasPrefix(line, prefix) {
				return 0, false
			}
			v := strings.Fields(strings.TrimPrefix(line, prefix))
			if len(v) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(v[0], 10, 64)
			return kb * 1024, err == nil
		}
		if v, ok := field("VmRSS:"); ok {
			m.RSS = v
		}
		if v, ok := field("VmHWM:"); ok {
			m.Peak = v
		}
		if v, ok := field("RssFile:"); ok {
			m.File = v
		}
	}
	return m, sc.Err()
}

// resetPeak resets VmHWM to the current RSS (clear_refs value 5, Linux
// 4.0 and later), so each scenario's peak is its own. It fails quietly
// where that is not allowed: the peak is then since the start.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
