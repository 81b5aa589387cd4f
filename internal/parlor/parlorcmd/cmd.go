// Package parlorcmd is `platform parlor`: the web app's configuration and
// its server.
package parlorcmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/parlor"
)

const usage = `usage: platform parlor <command>

  serve    run the web app (PORT, default 3000) against the gateway at PARLOR_API_URL`

// Config is parlor's configuration, read by config.Load. It has no
// database: everything it shows comes from the API at APIURL.
type Config struct {
	Port int `env:"PORT, default=3000" rule:"port"`
	// APIURL is the gateway's address, which parlor calls for every page
	// with the user's session token.
	APIURL string `env:"PARLOR_API_URL, required" rule:"url"`
	// APITimeout bounds every API round trip; past it the page says the
	// platform is unavailable.
	APITimeout time.Duration `env:"PARLOR_API_TIMEOUT, default=5s" rule:"positive"`
	// Telemetry is DEBUG_ADDR, METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT.
	observe.Telemetry
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	return nil
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
		var cfg Config
		if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
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
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "parlor", logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopTelemetry()
	return httpx.Serve(ctx, ln, metrics.Middleware(tracing.Middleware(h)), logger)
}
