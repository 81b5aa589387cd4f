package billingcmd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing/httpapi"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/service"
)

// Processors of BILLING_PROCESSOR.
const (
	ProcessorStripe = "stripe"
	ProcessorTest   = "test"
)

// Config is billing's configuration (billing.md §1): the kit's Base and
// billing's own variables. Every refusal is one line naming the variable;
// the key and the webhook secret are never printed.
type Config struct {
	service.Base
	// Env is BILLING_ENV; only development admits the test processor.
	Env                 string        `env:"BILLING_ENV, default=production"`
	Processor           string        `env:"BILLING_PROCESSOR"`
	StripeSecretKey     string        `env:"BILLING_STRIPE_SECRET_KEY"`
	StripeWebhookSecret string        `env:"BILLING_STRIPE_WEBHOOK_SECRET"`
	StripeAPIURL        string        `env:"BILLING_STRIPE_API_URL" rule:"url"`
	IdentityURL         string        `env:"BILLING_IDENTITY_URL" rule:"url"`
	IdentityTimeout     time.Duration `env:"BILLING_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	BoxURL              string        `env:"BILLING_BOX_URL" rule:"url"`
	PublicURL           string        `env:"BILLING_PUBLIC_URL, default=http://localhost:8080" rule:"url"`
	// ServiceTokens admit platform services to POST /v1/usage:
	// name:secret pairs, as courier's.
	ServiceTokens string `env:"BILLING_SERVICE_TOKENS"`
	// CourierURL and CourierToken ("billing:<secret>", one of courier's
	// COURIER_SERVICE_TOKENS) send receipts; unset, they wait queued.
	CourierURL   string `env:"BILLING_COURIER_URL" rule:"url"`
	CourierToken string `env:"BILLING_COURIER_TOKEN"`
	EventsURL    string `env:"EVENTS_URL"`

	serviceTokens httpapi.ServiceTokens
}

// Development reports whether BILLING_ENV is development.
func (c Config) Development() bool { return c.Env == "development" }

// Validate implements config.Validator.
func (c *Config) Validate() error {
	switch c.Processor {
	case ProcessorStripe:
		if !strings.HasPrefix(c.StripeSecretKey, "sk_") && !strings.HasPrefix(c.StripeSecretKey, "rk_") {
			return errors.New("BILLING_STRIPE_SECRET_KEY: is required with the stripe processor (sk_… or rk_…)")
		}
		if !strings.HasPrefix(c.StripeWebhookSecret, "whsec_") {
			return errors.New("BILLING_STRIPE_WEBHOOK_SECRET: is required with the stripe processor (whsec_…)")
		}
	case ProcessorTest:
		if !c.Development() {
			return errors.New("BILLING_PROCESSOR: test takes no money and is allowed only with BILLING_ENV=development; set stripe")
		}
		if c.StripeWebhookSecret == "" {
			c.StripeWebhookSecret = "whsec_dev_" + randomHex(24)
		} else if !strings.HasPrefix(c.StripeWebhookSecret, "whsec_") {
			return errors.New("BILLING_STRIPE_WEBHOOK_SECRET: must start with whsec_")
		}
	case "":
		return errors.New("BILLING_PROCESSOR: is required: stripe, or test for development")
	default:
		return fmt.Errorf("BILLING_PROCESSOR: must be stripe or test, got %q", c.Processor)
	}
	tokens, err := httpapi.ParseServiceTokens(c.ServiceTokens)
	if err != nil {
		return fmt.Errorf("BILLING_SERVICE_TOKENS: %v", err)
	}
	c.serviceTokens = tokens
	if c.CourierURL != "" && !strings.Contains(c.CourierToken, ":") {
		return errors.New("BILLING_COURIER_TOKEN: is required with BILLING_COURIER_URL, as name:secret")
	}
	if c.EventsURL != "" {
		if err := events.ValidateURL(c.EventsURL); err != nil {
			return fmt.Errorf("EVENTS_URL: %v", err)
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
