// Package parlorcmd is `platform parlor`: the web app's configuration and
// its server.
package parlorcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/parlor"
)

const usage = `usage: platform parlor <command>

  serve    run the web app (PORT, default 3000) against the gateway at PARLOR_API_URL`

// Config is parlor's configuration. It has no database: everything it
// shows comes from the API at APIURL.
type Config struct {
	// Port is PORT.
	Port int `env:"PORT, default=3000"`
	// MetricsAddr (METRICS_ADDR) serves Prometheus metrics at /metrics on
	// a listener of its own; empty serves none.
	MetricsAddr string `env:"METRICS_ADDR"`
	// APIURL is PARLOR_API_URL: the gateway's address, which parlor calls
	// for every page with the user's session token.
	APIURL string `env:"PARLOR_API_URL, required"`
	// APITimeout is PARLOR_API_TIMEOUT: the bound of every API round trip;
	// past it the page says the platform is unavailable.
	APITimeout time.Duration `env:"PARLOR_API_TIMEOUT, default=5s"`
}

// LoadConfig reads and validates the configuration; an error is one line
// naming the variable and the rule.
func LoadConfig(ctx context.Context, getenv func(string) string) (Config, error) {
	var cfg Config
	err := envconfig.ProcessWith(ctx, &envconfig.Config{
		Target: &cfg,
		Lookuper: envconfig.LookuperFunc(func(key string) (string, bool) {
			v := strings.TrimSpace(getenv(key))
			return v, v != ""
		}),
	})
	if err != nil {
		if errors.Is(err, envconfig.ErrMissingRequired) {
			return Config{}, errors.New("PARLOR_API_URL: is required: the gateway's address, such as http://127.0.0.1:8080")
		}
		return Config{}, configError(err)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return Config{}, fmt.Errorf("PORT: must be a port number from 0 to 65535, got %d", cfg.Port)
	}
	if cfg.APITimeout <= 0 {
		return Config{}, fmt.Errorf("PARLOR_API_TIMEOUT: must be a positive Go duration such as 5s, got %s", cfg.APITimeout)
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, fmt.Errorf("PARLOR_API_URL: must be an absolute http(s) URL, got %q", cfg.APIURL)
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	return cfg, nil
}

// rules are the variables' rules in words, for values envconfig cannot
// parse.
var rules = map[string]string{
	"PORT":               "must be a port number from 0 to 65535",
	"PARLOR_API_TIMEOUT": "must be a positive Go duration such as 5s",
}

// configError names the variable of a value envconfig could not parse (its
// errors name the Go field), in the platform's one-line form.
func configError(err error) error {
	msg := err.Error()
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if strings.HasPrefix(msg, f.Name+":") {
			return fmt.Errorf("%s: %s", name, rules[name])
		}
	}
	return err
}

// Run runs a `platform parlor` subcommand.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("parlor: no subcommand given\n%s", usage)
	}
	switch args[0] {
	case "serve":
		if len(args) > 1 {
			return cli.Usagef("parlor serve takes no arguments")
		}
		cfg, err := LoadConfig(ctx, env.Getenv)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
		}
		return Serve(ctx, cfg, env.Logger("parlor"), ln)
	case "help", "-h", "--help":
		fmt.Fprintln(env.Stdout, usage)
		return nil
	default:
		return cli.Usagef("parlor: unknown subcommand %q\n%s", args[0], usage)
	}
}

// Serve runs parlor on ln until ctx is done.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	h, err := parlor.New(parlor.Deps{API: parlor.NewClient(cfg.APIURL, cfg.APITimeout), Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}
	metrics, stopMetrics, err := observe.Start(ctx, "parlor", cfg.MetricsAddr, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	return httpx.Serve(ctx, ln, metrics.Middleware(h), logger)
}
