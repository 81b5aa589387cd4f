// Package devcmd is `platform dev`, the quick start: the gateway, identity
// and box in one process on SQLite files under one directory, with an
// embedded NATS JetStream server and identity's outbox publisher running.
package devcmd

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/billing/billingcmd"
	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/events/embeddednats"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/keyholder/embedregistry"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/muse/musecmd"
	"github.com/platformco/platform/internal/pantry/pantrycmd"
	"github.com/platformco/platform/internal/parlor/parlorcmd"
)

// Ports of the quick start (operations.md section 1).
const (
	gatewayPort  = 8080
	identityPort = 8081
	boxPort      = 8082
	courierPort  = 8083
	parlorPort   = 8085
	pantryPort   = 8089
	musePort     = 8090
)

// museKeyFile holds muse's MUSE_VAULT_KEY inside the data dir.
const museKeyFile = "muse.key"

// courierKeyFile holds courier's COURIER_SECRET_BOX_KEY inside the data dir.
const courierKeyFile = "courier.key"

// Keyholder and the registry it fronts (operations.md section 7). The
// registry has no auth, so it listens on loopback only.
const (
	keyholderPort = 8084
	registryAddr  = "127.0.0.1:8086"
)

// masterKeyFile holds identity's IDENTITY_MASTER_KEY inside the data dir.
const masterKeyFile = "master.key"

// boxMasterKeyFile holds box's BOX_MASTER_KEY inside the data dir: each
// service seals with its own key.
const boxMasterKeyFile = "box-master.key"

// boxLicenseKeyFile holds box's BOX_LICENSE_KEY (an Ed25519 seed) inside
// the data dir, so licences stay verifiable across restarts.
const boxLicenseKeyFile = "box-license.key"

// options are the command line of `platform dev`.
type options struct {
	data string
	// listen is the address the services listen on: loopback unless told
	// otherwise, since the quick start runs with test data and a staff
	// command anyone on the machine can use.
	listen string
}

func parseFlags(args []string, env cli.Env) (options, error) {
	var o options
	flags := cli.FlagSet("dev", env.Stderr)
	flags.StringVar(&o.data, "data", "data", "directory for the SQLite files, the NATS store and the master key")
	flags.StringVar(&o.listen, "listen", "127.0.0.1", "address the services listen on (0.0.0.0 for every interface)")
	if err := cli.Parse(flags, args); err != nil {
		return o, err
	}
	if flags.NArg() > 0 {
		return o, cli.Usagef("dev: unexpected argument %q", flags.Arg(0))
	}
	if strings.Contains(o.listen, ":") && net.ParseIP(o.listen) == nil {
		return o, cli.Usagef("dev: --listen takes an address without a port, such as 127.0.0.1 or 0.0.0.0; got %q", o.listen)
	}
	return o, nil
}

// listenAll listens on host at each port, closing them all on a failure,
// so a port in use is reported before anything starts.
func listenAll(host string, ports []int) (map[int]net.Listener, error) {
	listeners := map[int]net.Listener{}
	for _, port := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("port %d is in use (is another `platform dev` running?): %w", port, err)
		}
		listeners[port] = ln
	}
	return listeners, nil
}

// Run runs `platform dev [--data DIR] [--listen ADDR]`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	opts, err := parseFlags(args, env)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.data)
	if err != nil {
		return err
	}
	metrics, err := metricsAddrs(env)
	if err != nil {
		return err
	}
	// Everything under the data directory is the user's alone, the
	// embedded registry's blobs included.
	defer privateFiles()()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	masterKey, err := loadOrCreateMasterKey(filepath.Join(dir, masterKeyFile))
	if err != nil {
		return err
	}
	boxLicenseKey, err := loadOrCreateMasterKey(filepath.Join(dir, boxLicenseKeyFile))
	if err != nil {
		return err
	}
	boxMasterKey, err := loadOrCreateMasterKey(filepath.Join(dir, boxMasterKeyFile))
	if err != nil {
		return err
	}
	museKey, err := loadOrCreateMasterKey(filepath.Join(dir, museKeyFile))
	if err != nil {
		return err
	}

	listeners, err := listenAll(opts.listen, []int{gatewayPort, identityPort, boxPort, courierPort, keyholderPort, parlorPort, pantryPort, billingPort, darkroomPort, musePort})
	if err != nil {
		return err
	}
	keyholderLn := listeners[keyholderPort]
	registryLn, err := net.Listen("tcp", registryAddr)
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return fmt.Errorf("%s is in use (is another `platform dev` running?): %w", registryAddr, err)
	}
	reg, err := embedregistry.Start(ctx, registryLn, filepath.Join(dir, "registry"), env.Logger("registry"))
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	defer func() { _ = reg.Stop() }()
	s3URL, stopS3, err := startDevS3(dir)
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	defer stopS3()

	natsURL, stopNATS, err := embeddednats.Start(ctx, dir)
	if err != nil {
		return fmt.Errorf("embedded NATS: %w", err)
	}
	defer stopNATS()

	identityDB := "sqlite:" + filepath.Join(dir, "identity.db")
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	if err := identitycmd.Migrate(ctx, identityDB); err != nil {
		return fmt.Errorf("identity migrations: %w", err)
	}
	if err := boxcmd.Migrate(ctx, boxDB); err != nil {
		return fmt.Errorf("box migrations: %w", err)
	}
	courierCfg, err := courierConfig(ctx, env, dir, natsURL, metrics["courier"])
	if err != nil {
		return err
	}
	keyholderDB := "sqlite:" + filepath.Join(dir, "keyholder.db")
	if err := keyholdercmd.Migrate(ctx, keyholderDB); err != nil {
		return fmt.Errorf("keyholder migrations: %w", err)
	}

	pantryDB := "sqlite:" + filepath.Join(dir, "pantry.db")
	if _, err := pantrycmd.Command.Migrate(ctx, pantryDB); err != nil {
		return fmt.Errorf("pantry migrations: %w", err)
	}
	museDB := "sqlite:" + filepath.Join(dir, "muse.db")
	if _, err := musecmd.Command.Migrate(ctx, museDB); err != nil {
		return fmt.Errorf("muse migrations: %w", err)
	}

	dial, named := reachAt(opts.listen)
	identityURL := fmt.Sprintf("http://%s:%d", dial, identityPort)
	issuer := fmt.Sprintf("http://%s:%d", named, identityPort)
	// identity hands its mail to this courier with the credential courier
	// was given, and its links point at the web app behind the gateway.
	courierKey, err := loadOrCreateMasterKey(filepath.Join(dir, courierKeyFile))
	if err != nil {
		return err
	}
	var idCfg identitycmd.Config
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":                   fmt.Sprint(identityPort),
		"DATABASE_URL":           identityDB,
		"IDENTITY_MASTER_KEY":    masterKey,
		"IDENTITY_ISSUER":        issuer,
		"EVENTS_URL":             natsURL,
		"IDENTITY_PUBLIC_URL":    fmt.Sprintf("http://%s:%d", named, gatewayPort),
		"IDENTITY_COURIER_URL":   fmt.Sprintf("http://%s:%d", dial, courierPort),
		"IDENTITY_COURIER_TOKEN": "identity:" + CourierServiceSecret(courierKey),
		"METRICS_ADDR":           metrics["identity"],
	}), &idCfg); err != nil {
		return err
	}
	var boxCfg boxcmd.Config
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":             fmt.Sprint(boxPort),
		"DATABASE_URL":     boxDB,
		"BOX_IDENTITY_URL": identityURL,
		"EVENTS_URL":       natsURL,
		"BOX_MASTER_KEY":   boxMasterKey,
		"BOX_LICENSE_KEY":  boxLicenseKey,
		"BOX_PUBLIC_URL":   fmt.Sprintf("http://%s:%d", named, gatewayPort),
		"METRICS_ADDR":     metrics["box"],
	}), &boxCfg); err != nil {
		return err
	}
	var khCfg keyholdercmd.Config
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":                   fmt.Sprint(keyholderPort),
		"DATABASE_URL":           keyholderDB,
		"KEYHOLDER_BOX_URL":      fmt.Sprintf("http://127.0.0.1:%d", boxPort),
		"KEYHOLDER_IDENTITY_URL": identityURL,
		"KEYHOLDER_REGISTRY_URL": reg.URL,
		"KEYHOLDER_PUBLIC_HOST":  fmt.Sprintf("%s:%d", named, gatewayPort),
		"METRICS_ADDR":           metrics["keyholder"],
	}), &khCfg); err != nil {
		return err
	}
	var pantryCfg pantrycmd.Config
	if err := pantrycmd.Command.Load(ctx, only(env, map[string]string{
		"PORT":                fmt.Sprint(pantryPort),
		"DATABASE_URL":        pantryDB,
		"IDENTITY_ISSUER":     issuer,
		"PANTRY_IDENTITY_URL": identityURL,
		"EVENTS_URL":          natsURL,
		"PANTRY_DARKROOM_URL": fmt.Sprintf("http://%s:%d", dial, darkroomPort),
		"METRICS_ADDR":        metrics["pantry"],
	}), &pantryCfg); err != nil {
		return err
	}
	darkroomCfg, err := darkroomConfig(ctx, env, dir, issuer, s3URL, metrics["darkroom"])
	if err != nil {
		return err
	}
	// muse with the echo provider as the alias echo: the quick start asks
	// a model with no key and no network.
	var museCfg musecmd.Config
	if err := musecmd.Command.Load(ctx, only(env, map[string]string{
		"PORT":              fmt.Sprint(musePort),
		"DATABASE_URL":      museDB,
		"IDENTITY_ISSUER":   issuer,
		"MUSE_IDENTITY_URL": identityURL,
		"MUSE_VAULT_KEY":    museKey,
		"MUSE_ENV":          "development",
		"MUSE_ECHO_ALIAS":   "echo",
		"METRICS_ADDR":      metrics["muse"],
	}), &museCfg); err != nil {
		return err
	}
	billingCfg, err := billingConfig(ctx, env, dir, natsURL, dial, named, metrics["billing"])
	if err != nil {
		return err
	}
	var gwCfg gatewaycmd.Config
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":            fmt.Sprint(gatewayPort),
		"IDENTITY_URL":    identityURL,
		"IDENTITY_ISSUER": issuer,
		"BOX_URL":         fmt.Sprintf("http://%s:%d", dial, boxPort),
		"COURIER_URL":     fmt.Sprintf("http://%s:%d", dial, courierPort),
		"KEYHOLDER_URL":   fmt.Sprintf("http://%s:%d", dial, keyholderPort),
		"PARLOR_URL":      fmt.Sprintf("http://%s:%d", dial, parlorPort),
		"PANTRY_URL":      fmt.Sprintf("http://%s:%d", dial, pantryPort),
		"BILLING_URL":     fmt.Sprintf("http://%s:%d", dial, billingPort),
		"DARKROOM_URL":    fmt.Sprintf("http://%s:%d", dial, darkroomPort),
		"MUSE_URL":        fmt.Sprintf("http://%s:%d", dial, musePort),
		// parlor calls the gateway for every browser, from dial; the
		// browser's address it forwards is believed from there alone.
		"TRUSTED_PROXIES": parlorAddr(dial),
		"METRICS_ADDR":    metrics["gateway"],
	}), &gwCfg); err != nil {
		return err
	}
	gwCfg.Documents = apidocs.Public()
	var parlorCfg parlorcmd.Config
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":           fmt.Sprint(parlorPort),
		"PARLOR_API_URL": fmt.Sprintf("http://%s:%d", dial, gatewayPort),
		"METRICS_ADDR":   metrics["parlor"],
	}), &parlorCfg); err != nil {
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
	serve("identity", func() error {
		return identitycmd.Serve(ctx, idCfg, devLogger(env, "identity"), listeners[identityPort])
	})
	serve("box", func() error { return boxcmd.Serve(ctx, boxCfg, devLogger(env, "box"), listeners[boxPort]) })
	serve("keyholder", func() error { return keyholdercmd.Serve(ctx, khCfg, devLogger(env, "keyholder"), keyholderLn) })
	serve("gateway", func() error { return gatewaycmd.Serve(ctx, gwCfg, devLogger(env, "gateway"), listeners[gatewayPort]) })
	serve("courier", func() error {
		return couriercmd.Serve(ctx, courierCfg, devLogger(env, "courier"), listeners[courierPort])
	})
	serve("parlor", func() error { return parlorcmd.Serve(ctx, parlorCfg, devLogger(env, "parlor"), listeners[parlorPort]) })
	serve("pantry", func() error { return pantrycmd.Serve(ctx, pantryCfg, devLogger(env, "pantry"), listeners[pantryPort]) })
	serve("muse", func() error { return musecmd.Serve(ctx, museCfg, devLogger(env, "muse"), listeners[musePort]) })
	serve("billing", func() error {
		return billingcmd.Serve(ctx, billingCfg, devLogger(env, "billing"), listeners[billingPort])
	})
	serve("darkroom", func() error {
		return darkroomcmd.Serve(ctx, darkroomCfg, devLogger(env, "darkroom"), listeners[darkroomPort])
	})

	// The banner comes last, once the app answers, so the services'
	// start-up lines do not bury it.
	waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", gatewayPort), 30*time.Second)
	printBanner(env, dir, natsURL, named)
	if len(metrics) > 0 {
		fmt.Fprintf(env.Stdout, "  metrics   /metrics at")
		for _, svc := range metricsOrder {
			fmt.Fprintf(env.Stdout, " %s %s", svc, metrics[svc])
		}
		fmt.Fprintln(env.Stdout)
	}
	wg.Wait()
	return firstErr
}

// reachAt is how the services reach each other (dial) and how the banner
// and the issuer name them (named), given the address they listen on.
func reachAt(listen string) (dial, named string) {
	ip := net.ParseIP(listen)
	if listen == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		return "127.0.0.1", "localhost"
	}
	if ip != nil && ip.To4() == nil {
		listen = "[" + listen + "]"
	}
	return listen, listen
}

// parlorAddr is the address parlor's API calls reach the gateway from:
// parlor dials the gateway at dial, from the same host.
func parlorAddr(dial string) string { return strings.Trim(dial, "[]") }

// only is the environment of one embedded service: the given variables,
// plus LOG_LEVEL from the real one. Nothing else leaks in, so a
// DATABASE_URL in the shell cannot point the quick start elsewhere.
func only(env cli.Env, vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "LOG_LEVEL" {
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

func printBanner(env cli.Env, dir, natsURL, host string) {
	rel := dir
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(r, "..") {
			rel = "./" + r
		}
	}
	fmt.Fprintf(env.Stdout, `platform dev is running (Ctrl-C stops it)

  gateway   http://%[1]s:%[2]d   (start here)
  identity  http://%[1]s:%[3]d
  box       http://%[1]s:%[4]d
  courier   http://%[1]s:%[5]d   (mail lands in the local mailbox: http://%[1]s:%[5]d/dev/mail)
  keyholder http://%[1]s:%[8]d   (registry credentials; pull through the gateway: %[1]s:%[2]d/v2/)
  registry  http://%[9]s   (the embedded upstream; push with platform keyholder publish)
  parlor    http://%[1]s:%[10]d   (the web app, served by the gateway at http://%[1]s:%[2]d/)
  pantry    http://%[1]s:%[11]d   (the project registry)
  billing   http://%[1]s:%[12]d   (test processor: pay with 4242 4242 4242 4242)
  darkroom  http://%[1]s:%[13]d   (media, over the embedded S3 server at http://%[14]s)
  muse      http://%[1]s:%[15]d   (OpenAI-compatible: model "echo" answers with your last message)
  events    %[6]s   (stream PLATFORM_EVENTS)
  data      %[7]s

Make a registered user staff (an operator who can grant entitlements):

  DATABASE_URL=sqlite:%[7]s/identity.db go run ./cmd/platform identity staff add you@example.com

Publish a first release (push an OCI image layout or tarball, then publish it at box).
PLATFORM_TOKEN is a staff user's session token: the "token" of
POST http://%[1]s:%[2]d/v1/session with {"email": ..., "password": ...}.

  PLATFORM_TOKEN=... KEYHOLDER_REGISTRY_URL=http://%[9]s BOX_URL=http://%[1]s:%[4]d \
    go run ./cmd/platform keyholder publish --repository platform --version 1.0.0 ./image

Request logs are at debug here; LOG_LEVEL=debug shows them.

`, host, gatewayPort, identityPort, boxPort, courierPort, natsURL, rel, keyholderPort, registryAddr, parlorPort, pantryPort, billingPort, darkroomPort, devS3Addr, musePort)
	env.Logger("dev").Info("platform dev started", "data", dir)
}

// courierConfig migrates courier's database and returns its configuration:
// the local mail adapter writing under DIR/mail, its secret box key kept in
// DIR/courier.key, and identity's service credential derived from it (so
// an identity relay configured by the quick start can present it).
func courierConfig(ctx context.Context, env cli.Env, dir, natsURL, metricsAddr string) (couriercmd.Config, error) {
	db := "sqlite:" + filepath.Join(dir, "courier.db")
	if err := couriercmd.Migrate(ctx, db); err != nil {
		return couriercmd.Config{}, fmt.Errorf("courier migrations: %w", err)
	}
	key, err := loadOrCreateMasterKey(filepath.Join(dir, courierKeyFile))
	if err != nil {
		return couriercmd.Config{}, err
	}
	vapid, err := loadOrCreateVAPID(filepath.Join(dir, courierVAPIDFile))
	if err != nil {
		return couriercmd.Config{}, err
	}
	var cfg couriercmd.Config
	err = config.Load(ctx, only(env, withVAPID(vapid, map[string]string{
		"PORT":                   fmt.Sprint(courierPort),
		"DATABASE_URL":           db,
		"COURIER_ENV":            "development",
		"COURIER_SECRET_BOX_KEY": key,
		"COURIER_MAIL_ADAPTER":   couriercmd.AdapterLocal,
		"COURIER_LOCAL_DIR":      filepath.Join(dir, "mail"),
		"COURIER_MAIL_FROM":      "Platform <no-reply@platform.localhost>",
		"COURIER_SERVICE_TOKENS": "identity:" + CourierServiceSecret(key) + ",billing:" + billingCourierSecret(key),
		"IDENTITY_ISSUER":        fmt.Sprintf("http://localhost:%d", identityPort),
		"COURIER_IDENTITY_URL":   fmt.Sprintf("http://127.0.0.1:%d", identityPort),
		"EVENTS_URL":             natsURL,
		"METRICS_ADDR":           metricsAddr,
	})), &cfg)
	return cfg, err
}

// CourierServiceSecret is the secret of identity's courier credential in
// the quick start (COURIER_SERVICE_TOKENS "identity:<secret>"), derived
// from courier's key so nothing more is stored.
func CourierServiceSecret(courierKey string) string {
	sum := sha256.Sum256([]byte("platform dev: identity's courier credential\x00" + courierKey))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// waitReady polls url until it answers 200, ctx ends or limit passes.
func waitReady(ctx context.Context, url string, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// devLogger is a service's logger in the quick start: the per-request
// lines go to debug, so the banner and what matters stay readable.
func devLogger(env cli.Env, service string) *slog.Logger {
	return slog.New(quietRequests{env.Logger(service).Handler()})
}

// quietRequests lowers httpx.Observe's "request" lines to debug.
type quietRequests struct{ slog.Handler }

func (q quietRequests) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "request" && r.Level == slog.LevelInfo {
		if !q.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietRequests) WithAttrs(as []slog.Attr) slog.Handler {
	return quietRequests{q.Handler.WithAttrs(as)}
}

func (q quietRequests) WithGroup(name string) slog.Handler {
	return quietRequests{q.Handler.WithGroup(name)}
}
