// Package parlorcmd is `platform parlor`: the web app's configuration and
// its server.
package parlorcmd

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/parlor"
	"github.com/platformco/platform/internal/service"
)

// Command is `platform parlor`.
var Command = service.Command[Config, *Config]{
	Name:        "parlor",
	Summary:     "the web app against the gateway at PARLOR_API_URL",
	DefaultPort: 3000,
	Serve:       Serve,
}

// Config is parlor's configuration, read by service.Load. It has no
// database: everything it shows comes from the API at APIURL.
type Config struct {
	// Base is PORT, LOG_LEVEL and telemetry (parlor ignores DATABASE_URL).
	service.Base
	// APIURL is the gateway's address, which parlor calls for every page
	// with the user's session token.
	APIURL string `env:"PARLOR_API_URL, required" rule:"url"`
	// APITimeout bounds every API round trip; past it the page says the
	// platform is unavailable.
	APITimeout time.Duration `env:"PARLOR_API_TIMEOUT, default=5s" rule:"positive"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	return nil
}

// Serve runs parlor on ln until ctx is done (service.Serve).
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name: "parlor",
		Start: func(_ context.Context, app *service.App) (http.Handler, error) {
			return parlor.New(parlor.Deps{API: parlor.NewClient(cfg.APIURL, cfg.APITimeout), Logger: logger, Ready: app.Ready.Probe})
		},
	})
}
