// Package devcmd is `platform dev`, the quick start: the gateway, identity
// and box in one process on SQLite files under one directory, with an
// embedded NATS JetStream server and identity's outbox publisher running.
package devcmd

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/events/embeddednats"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/parlor/parlorcmd"
)

// Ports of the quick start (operations.md section 1).
const (
	gatewayPort  = 8080
	identityPort = 8081
	boxPort      = 8082
	parlorPort   = 8085
)

// masterKeyFile holds identity's IDENTITY_MASTER_KEY inside the data dir.
const masterKeyFile = "master.key"

// Run runs `platform dev [--data DIR]`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	flags := cli.FlagSet("dev", env.Stderr)
	dataDir := flags.String("data", "data", "directory for the SQLite files, the NATS store and the master key")
	if err := cli.Parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return cli.Usagef("dev: unexpected argument %q", flags.Arg(0))
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	masterKey, err := loadOrCreateMasterKey(filepath.Join(dir, masterKeyFile))
	if err != nil {
		return err
	}

	// Listen first, so a port in use is reported before anything starts.
	listeners := map[int]net.Listener{}
	for _, port := range []int{gatewayPort, identityPort, boxPort, parlorPort} {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("port %d is in use (is another `platform dev` running?): %w", port, err)
		}
		listeners[port] = ln
	}

	natsURL, stopNATS, err := embeddednats.Start(ctx, dir)
	if err != nil {
		return fmt.Errorf("embedded NATS: %w", err)
	}
	defer stopNATS()

	identityDB := "sqlite:" + filepath.Join(dir, "identity.db")
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	quiet := cli.Env{Getenv: env.Getenv, Stdout: devNull{}, Stderr: env.Stderr}
	if err := identitycmd.Migrate(ctx, identityDB, quiet); err != nil {
		return fmt.Errorf("identity migrations: %w", err)
	}
	if err := boxcmd.Migrate(ctx, boxDB); err != nil {
		return fmt.Errorf("box migrations: %w", err)
	}

	identityURL := fmt.Sprintf("http://127.0.0.1:%d", identityPort)
	issuer := fmt.Sprintf("http://localhost:%d", identityPort)
	idCfg, err := identitycmd.LoadConfig(only(env, map[string]string{
		"PORT":                fmt.Sprint(identityPort),
		"DATABASE_URL":        identityDB,
		"IDENTITY_MASTER_KEY": masterKey,
		"IDENTITY_ISSUER":     issuer,
		"EVENTS_URL":          natsURL,
	}))
	if err != nil {
		return err
	}
	boxCfg, err := boxcmd.LoadConfig(only(env, map[string]string{
		"PORT":             fmt.Sprint(boxPort),
		"DATABASE_URL":     boxDB,
		"BOX_IDENTITY_URL": identityURL,
		"EVENTS_URL":       natsURL,
	}))
	if err != nil {
		return err
	}
	gwCfg, err := gatewaycmd.LoadConfig(only(env, map[string]string{
		"PORT":            fmt.Sprint(gatewayPort),
		"IDENTITY_URL":    identityURL,
		"IDENTITY_ISSUER": issuer,
		"BOX_URL":         fmt.Sprintf("http://127.0.0.1:%d", boxPort),
		"PARLOR_URL":      fmt.Sprintf("http://127.0.0.1:%d", parlorPort),
	}))
	if err != nil {
		return err
	}
	parlorCfg, err := parlorcmd.LoadConfig(ctx, only(env, map[string]string{
		"PORT":           fmt.Sprint(parlorPort),
		"PARLOR_API_URL": fmt.Sprintf("http://127.0.0.1:%d", gatewayPort),
	}))
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	serve := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", name, err)
				}
				mu.Unlock()
			}
			cancel() // one service stopping stops the others
		}()
	}
	serve("identity", func() error { return identitycmd.Serve(ctx, idCfg, env.Logger("identity"), listeners[identityPort]) })
	serve("box", func() error { return boxcmd.Serve(ctx, boxCfg, env.Logger("box"), listeners[boxPort]) })
	serve("gateway", func() error { return gatewaycmd.Serve(ctx, gwCfg, env.Logger("gateway"), listeners[gatewayPort]) })
	serve("parlor", func() error { return parlorcmd.Serve(ctx, parlorCfg, env.Logger("parlor"), listeners[parlorPort]) })

	printBanner(env, dir, natsURL)
	wg.Wait()
	return firstErr
}

// only is the environment of one embedded service: the given variables,
// plus LOG_LEVEL and GOMAXPROCS from the real one (GOMAXPROCS is the
// process's, and identity must see that it is set to leave it alone).
// Nothing else leaks in, so a DATABASE_URL in the shell cannot point the
// quick start elsewhere.
func only(env cli.Env, vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "LOG_LEVEL" || k == "GOMAXPROCS" {
			return env.Getenv(k)
		}
		return ""
	}
}

// loadOrCreateMasterKey reads the data dir's master key, generating it
// once (mode 0600) when absent. Losing it makes the stored signing keys
// unreadable, so it is never overwritten.
func loadOrCreateMasterKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key := strings.TrimSpace(string(b))
		if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
			return "", fmt.Errorf("%s: not the base64 encoding of 32 bytes; restore it or move the data directory aside", path)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	key := base64.StdEncoding.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create master key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return key, f.Close()
}

func printBanner(env cli.Env, dir, natsURL string) {
	rel := dir
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(r, "..") {
			rel = "./" + r
		}
	}
	fmt.Fprintf(env.Stdout, `platform dev is running (Ctrl-C stops it)

  gateway   http://localhost:%d   (start here)
  identity  http://localhost:%d
  box       http://localhost:%d
  parlor    http://localhost:%d   (the web app)
  events    %s   (stream PLATFORM_EVENTS)
  data      %s

Make a registered user staff (an operator who can grant entitlements):

  DATABASE_URL=sqlite:%s/identity.db go run ./cmd/platform identity staff add you@example.com

`, gatewayPort, identityPort, boxPort, parlorPort, natsURL, rel, rel)
	slog.New(slog.NewJSONHandler(env.Stderr, nil)).Info("platform dev started", "data", dir)
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }
