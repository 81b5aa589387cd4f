// Command bench is the platform's load harness: it builds the platform
// binary, starts identity, box and the gateway on loopback (SQLite, or
// PostgreSQL with --engine postgres), prepares users, accounts and grants,
// and runs each scenario closed-loop at several concurrency levels against
// a baseline measured in the same run: the two (or three) are interleaved
// in --rounds rounds and each target is judged on the median round, with
// the spread printed beside it. It writes results.json and report.html
// under bench/results/<timestamp>/ and prints a table of targets met or
// missed. It is a module of its own, so its load library stays out of the
// services' module; run it from the repository's root (make bench builds
// it into bin/bench):
//
//	bin/bench [--engine sqlite|postgres] [--scenario all|read,login,...]
//	          [--duration 6s] [--warmup 1s] [--concurrency 1,8,32,128] [--rounds 3]
//	bin/bench --scenario soak --soak 10m
//
// Performance is measured here and never asserted in tests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fortio.org/log"
)

// scenarioNames are the scenarios `--scenario all` runs, in order.
var scenarioNames = []string{"read", "login", "flood", "artifact", "grant", "gateway", "outbox", "apikey", "mfa", "oidc", "observe", "email", "webhook", "manifest", "blob", "pullrss", "pantry", "darkroom", "ingest", "checkout", "plans", "muse"}

type config struct {
	engine      string
	pgURL       string
	scenarios   []string
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	levels      []int
	outDir      string
	outboxRows  int
	outboxBatch int
	soak        time.Duration
	soakRate    float64
	soakClients int
	serviceEnv  map[string]string
	failOnMiss  bool
	pprofBase   int
}

// idleRest is the pause before the idle memory reading: long enough for a
// service to hand back what the registrations' password hashes took.
const idleRest = 13 * time.Second

// selfServers are the processes the harness runs itself as (startSelf):
// servers it measures the platform against.
var selfServers = map[string]func() error{
	"serve-bare":     serveBare,
	"serve-proxy":    serveProxy,
	"serve-registry": serveRegistry,
}

func firstArg() string {
	if len(os.Args) > 1 {
		return os.Args[1]
	}
	return ""
}

func main() {
	if serve, ok := selfServers[firstArg()]; ok {
		if err := serve(); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if !ok && cfg.failOnMiss {
		// Missed targets are a finding, not a failure of the harness:
		// only scripts that ask get a non-zero status for them.
		os.Exit(3)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	cfg := config{serviceEnv: map[string]string{}}
	fs.StringVar(&cfg.engine, "engine", "sqlite", "sqlite or postgres")
	fs.StringVar(&cfg.pgURL, "pg-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server to create the bench databases in (--engine postgres)")
	scen := fs.String("scenario", "all", "comma-separated: all, "+strings.Join(scenarioNames, ", ")+", or soak")
	fs.DurationVar(&cfg.duration, "duration", 6*time.Second, "measured time per scenario and concurrency level, split between the rounds")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured warm-up before each measured run")
	fs.IntVar(&cfg.rounds, "rounds", 3, "interleaved rounds per level: targets are judged on the median round (the duration is split between them)")
	levels := fs.String("concurrency", "1,8,32,128", "closed-loop client counts")
	fs.StringVar(&cfg.outDir, "out", filepath.Join("bench", "results"), "results directory (a timestamped directory is made inside)")
	fs.IntVar(&cfg.outboxRows, "outbox-rows", 200000, "outbox rows per drain (two drains a round)")
	fs.IntVar(&cfg.outboxBatch, "outbox-batch", 0, "outbox publisher batch size (0: identity's default) — for experiments")
	fs.DurationVar(&cfg.soak, "soak", 10*time.Minute, "soak duration (--scenario soak)")
	fs.Float64Var(&cfg.soakRate, "soak-rate", 200, "soak: operations per second, open loop")
	fs.IntVar(&cfg.soakClients, "soak-clients", 16, "soak: client goroutines")
	fs.IntVar(&cfg.pprofBase, "pprof", 0, "serve each service's profiling endpoints on loopback: identity on this port, box on the next, the gateway on the one after (0: off)")
	fs.BoolVar(&cfg.failOnMiss, "fail-on-miss", false, "exit with status 3 when a target is missed")
	var envs multiFlag
	fs.Var(&envs, "service-env", "KEY=VALUE added to every service's environment (repeatable), e.g. LOG_LEVEL=debug")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.engine != "sqlite" && cfg.engine != "postgres" {
		return config{}, fmt.Errorf("--engine: sqlite or postgres, got %q", cfg.engine)
	}
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "all":
			cfg.scenarios = append(cfg.scenarios, scenarioNames...)
		case s == "soak" || slices.Contains(scenarioNames, s):
			cfg.scenarios = append(cfg.scenarios, s)
		default:
			return config{}, fmt.Errorf("--scenario: unknown %q (all, %s, soak)", s, strings.Join(scenarioNames, ", "))
		}
	}
	for _, l := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || n < 1 {
			return config{}, fmt.Errorf("--concurrency: positive integers, got %q", l)
		}
		cfg.levels = append(cfg.levels, n)
	}
	if cfg.duration <= 0 || cfg.warmup < 0 || cfg.soak <= 0 || cfg.soakRate <= 0 || cfg.soakClients < 1 || cfg.outboxRows < 100 || cfg.rounds < 1 {
		return config{}, errors.New("--duration, --soak, --soak-rate, --soak-clients and --rounds must be positive, --warmup not negative, --outbox-rows at least 100")
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return config{}, fmt.Errorf("--service-env: KEY=VALUE, got %q", kv)
		}
		cfg.serviceEnv[k] = v
	}
	return cfg, nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// run builds, starts, prepares and measures; it reports whether every
// judged target was met.
func run(ctx context.Context, cfg config) (bool, error) {
	log.SetLogLevelQuiet(log.Error)
	started := time.Now()
	dir := filepath.Join(cfg.outDir, started.UTC().Format("20060102-150405")+"-"+cfg.engine)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	work, err := os.MkdirTemp("", "platform-bench-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(work)

	fmt.Printf("bench: building ./cmd/platform\n")
	bin, err := buildPlatform(ctx, work)
	if err != nil {
		return false, err
	}
	fmt.Printf("bench: starting identity, box and gateway on %s\n", cfg.engine)
	p, err := startPlatform(ctx, cfg, bin, work)
	if err != nil {
		return false, err
	}
	defer p.stop()
	fresh := map[string]Mem{}
	for _, s := range p.services() {
		m, _ := readMemory(s.pid())
		fresh[s.Name] = Mem{RSSMiB: mib(m.RSS), PeakMiB: mib(m.Peak), FileMiB: mib(m.File)}
	}
	maxLevel := slices.Max(append(slices.Clone(cfg.levels), 64+32))
	client := newClient(maxLevel)
	if err := p.prepare(ctx, client); err != nil {
		return false, fmt.Errorf("prepare data: %w", err)
	}
	if p.bare, err = startBare(ctx, work, p.readBody, p.readType); err != nil {
		return false, err
	}
	// Idle: after start-up and data preparation, and a rest long enough
	// for identity to hand back the memory the registrations' hashes took,
	// before any load.
	time.Sleep(idleRest)
	report := &Report{
		Started: started.UTC(), Engine: cfg.engine, GoMaxProcs: numCPU(), Duration: cfg.duration.Seconds(),
		Warmup: cfg.warmup.Seconds(), Rounds: cfg.rounds, Levels: cfg.levels, Idle: map[string]Mem{}, Fresh: fresh,
	}
	for _, s := range p.services() {
		m, _ := readMemory(s.pid())
		report.Idle[s.Name] = Mem{RSSMiB: mib(m.RSS), PeakMiB: mib(m.Peak), FileMiB: mib(m.File)}
	}
	b := &bench{cfg: cfg, p: p, client: client, dir: work}
	defer func() { b.billing.stop() }()
	for _, name := range cfg.scenarios {
		if ctx.Err() != nil {
			break
		}
		fmt.Printf("bench: scenario %s\n", name)
		for _, s := range p.services() {
			resetPeak(s.pid())
		}
		var res *Scenario
		var err error
		switch name {
		case "read":
			res, err = b.read(ctx)
		case "login":
			res, err = b.login(ctx)
		case "flood":
			res, err = b.flood(ctx)
		case "artifact":
			res, err = b.artifact(ctx)
		case "grant":
			res, err = b.grantRevoke(ctx)
		case "gateway":
			res, err = b.gatewayRead(ctx)
		case "outbox":
			res, err = b.outbox(ctx)
		case "oidc":
			res, err = b.oidc(ctx)
		case "observe":
			res, err = b.observed(ctx)
		case "apikey":
			res, err = b.apiKey(ctx)
		case "mfa":
			res, err = b.mfa(ctx)
		case "darkroom":
			res, err = b.darkroomScenario(ctx)
		case "email", "webhook":
			res, err = b.courierScenario(ctx, name)
		case "manifest":
			res, err = b.registryManifest(ctx)
		case "blob":
			res, err = b.registryBlob(ctx)
		case "pullrss":
			res, err = b.registryPullRSS(ctx)
		case "pantry":
			res, err = b.pantry(ctx)
		case "muse":
			res, err = b.museScenario(ctx)
		case "ingest":
			res, err = b.billingIngest(ctx)
		case "checkout":
			res, err = b.billingCheckout(ctx)
		case "plans":
			res, err = b.billingPlans(ctx)
		case "soak":
			res, err = b.soak(ctx)
		}
		if err != nil {
			return false, fmt.Errorf("scenario %s: %w", name, err)
		}
		res.Memory = map[string]Mem{}
		for _, s := range p.services() {
			m, _ := readMemory(s.pid())
			res.Memory[s.Name] = Mem{RSSMiB: mib(m.RSS), PeakMiB: mib(m.Peak), FileMiB: mib(m.File)}
		}
		report.Scenarios = append(report.Scenarios, res)
		printScenario(os.Stdout, res)
	}
	report.memoryTargets()
	report.Elapsed = time.Since(started).Seconds()
	if err := report.write(dir); err != nil {
		return false, err
	}
	report.printTable(os.Stdout)
	fmt.Printf("\nbench: %s and %s written; took %s\n", filepath.Join(dir, "results.json"), filepath.Join(dir, "report.html"), time.Since(started).Round(time.Second))
	return report.AllMet, nil
}

// startBare runs this harness again as the bare baseline server: a plain
// net/http handler answering every request with identity's bytes.
func startBare(ctx context.Context, dir string, body []byte, contentType string) (*service, error) {
	bodyFile := filepath.Join(dir, "bare-body")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		return nil, err
	}
	return startSelf(ctx, dir, "bare", map[string]string{"BENCH_BARE_BODY": bodyFile, "BENCH_BARE_TYPE": contentType})
}

// startSelf runs this harness again as the server "serve-"+name (see
// selfServers) on a free loopback port, logging to dir/name.log.
func startSelf(ctx context.Context, dir, name string, env map[string]string) (*service, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	env["PORT"] = strconv.Itoa(port)
	return startService(ctx, name, port, filepath.Join(dir, name+".log"), self, env, "serve-"+name)
}

// serveBare is the baseline server's process.
func serveBare() error {
	body, err := os.ReadFile(os.Getenv("BENCH_BARE_BODY"))
	if err != nil {
		return err
	}
	ctype := os.Getenv("BENCH_BARE_TYPE")
	return serveUntilSignal(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}))
}

// startProxy runs this harness again as the reference proxy: a stock
// httputil.ReverseProxy in front of upstream, on net/http's transport with
// the gateway's connection settings, and nothing else (no token check, rate
// limit, log or trace). It is what a stock net/http hop costs, before any
// of the gateway's own work.
func startProxy(ctx context.Context, dir, upstream string) (*service, error) {
	return startSelf(ctx, dir, "proxy", map[string]string{"BENCH_PROXY_UPSTREAM": upstream})
}

// serveProxy is the reference proxy's process.
func serveProxy() error {
	upstream, err := url.Parse(os.Getenv("BENCH_PROXY_UPSTREAM"))
	if err != nil || upstream.Host == "" {
		return fmt.Errorf("BENCH_PROXY_UPSTREAM: want an http URL, got %q", os.Getenv("BENCH_PROXY_UPSTREAM"))
	}
	return serveUntilSignal(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(upstream) },
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
		},
	})
}

// serveUntilSignal serves h on 127.0.0.1:$PORT until SIGINT or SIGTERM.
func serveUntilSignal(h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
