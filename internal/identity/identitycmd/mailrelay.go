package identitycmd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/mailrelay"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/service"
)

// minCourierSecret is courier's least service secret (courier.md section 1).
const minCourierSecret = 32

// mailRelayEvery is how often the relay looks for due mail.
const mailRelayEvery = time.Second

// validateCourier checks the courier settings: both or neither, and the
// credential as courier accepts it.
func (c *Config) validateCourier() error {
	switch {
	case c.CourierURL == "" && c.CourierToken == "":
		return nil
	case c.CourierToken == "":
		return errors.New("IDENTITY_COURIER_TOKEN: is required whenever IDENTITY_COURIER_URL is set")
	case c.CourierURL == "":
		return errors.New("IDENTITY_COURIER_URL: is required whenever IDENTITY_COURIER_TOKEN is set")
	}
	name, secret, ok := strings.Cut(c.CourierToken, ":")
	if !ok || name != "identity" || len(secret) < minCourierSecret {
		return errors.New("IDENTITY_COURIER_TOKEN: must be identity:<secret> with a secret of at least 32 characters")
	}
	return nil
}

// startMailRelay runs the relay when courier is configured; otherwise the
// mail waits in the database until it is.
func startMailRelay(app *service.App, cfg Config, svc *identity.Service, logger *slog.Logger) {
	if cfg.CourierURL == "" {
		logger.Info("mail relay off: IDENTITY_COURIER_URL is not set; mail waits in the database")
		return
	}
	r := &mailrelay.Relay{
		Store:  sqlstore.New(app.DB),
		Sealer: svc.MailSealer(),
		URL:    cfg.CourierURL,
		Token:  cfg.CourierToken,
		Client: &http.Client{Timeout: 10 * time.Second},
		Logger: logger,
	}
	app.Go(func(ctx context.Context) { r.Run(ctx, mailRelayEvery) })
}
