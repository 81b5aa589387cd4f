package couriercmd

import (
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/push"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/service"
)

// Mail adapters of COURIER_MAIL_ADAPTER.
const (
	AdapterSMTP  = "smtp"
	AdapterLocal = "local"
)

// Config is courier's configuration, read by config.Load: each field's
// variable, default and rule are on its tag; Validate adds the rules that
// span fields (courier.md section 1). Every refusal is one line naming the
// variable.
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (required), DATABASE_TIMEOUT
	// and telemetry.
	service.Base
	// Env is COURIER_ENV; only "development" admits the local adapter and
	// plain-http loopback webhook endpoints.
	Env string `env:"COURIER_ENV, default=production"`
	// SecretBoxKey seals template data and webhook secrets.
	SecretBoxKey config.Key `env:"COURIER_SECRET_BOX_KEY" rule:"key32"`
	MailAdapter  string     `env:"COURIER_MAIL_ADAPTER"`
	SMTPHost     string     `env:"COURIER_SMTP_HOST"`
	SMTPUsername string     `env:"COURIER_SMTP_USERNAME"`
	SMTPPassword string     `env:"COURIER_SMTP_PASSWORD"`
	SMTPTLS      string     `env:"COURIER_SMTP_TLS, default=starttls" rule:"oneof=starttls tls none"`
	MailFrom     string     `env:"COURIER_MAIL_FROM"`
	LocalDir     string     `env:"COURIER_LOCAL_DIR, default=data/mail"`
	// ServiceTokens is name:secret,…
	ServiceTokens   string        `env:"COURIER_SERVICE_TOKENS"`
	IdentityIssuer  string        `env:"IDENTITY_ISSUER" rule:"url"`
	IdentityURL     string        `env:"COURIER_IDENTITY_URL" rule:"url"`
	IdentityTimeout time.Duration `env:"COURIER_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
	EventsURL       string        `env:"EVENTS_URL"`
	// VAPIDPublicKey, VAPIDPrivateKey and VAPIDSubject turn Web Push on
	// (courier.md section 6); without a pair the push routes answer 404.
	VAPIDPublicKey  string `env:"COURIER_VAPID_PUBLIC_KEY"`
	VAPIDPrivateKey string `env:"COURIER_VAPID_PRIVATE_KEY"`
	VAPIDSubject    string `env:"COURIER_VAPID_SUBJECT"`

	tokens httpapi.ServiceTokens
	vapid  *push.VAPID
}

// Push reports whether a VAPID key pair turns Web Push on.
func (c Config) Push() bool { return c.vapid != nil }

// Development reports whether COURIER_ENV is development.
func (c Config) Development() bool { return c.Env == "development" }

// Validate implements config.Validator.
func (c *Config) Validate() error { return c.validate() }

func (c *Config) validate() error {
	if len(c.SecretBoxKey) == 0 {
		return fmt.Errorf("COURIER_SECRET_BOX_KEY: is required (the base64 encoding of 32 random bytes; it seals template data and webhook secrets)")
	}
	switch c.MailAdapter {
	case AdapterSMTP:
	case AdapterLocal:
		if !c.Development() {
			return fmt.Errorf("COURIER_MAIL_ADAPTER: local delivers nothing and is allowed only with COURIER_ENV=development; set smtp")
		}
	case "":
		if !c.Development() {
			return fmt.Errorf("COURIER_MAIL_ADAPTER: is required and must be smtp (local is allowed only with COURIER_ENV=development)")
		}
		return fmt.Errorf("COURIER_MAIL_ADAPTER: is required: smtp, or local for development")
	default:
		if !c.Development() {
			return fmt.Errorf("COURIER_MAIL_ADAPTER: must be smtp, got %q", c.MailAdapter)
		}
		return fmt.Errorf("COURIER_MAIL_ADAPTER: must be smtp or local, got %q", c.MailAdapter)
	}
	if c.MailAdapter == AdapterSMTP {
		if c.SMTPHost == "" {
			return fmt.Errorf("COURIER_SMTP_HOST: is required with the smtp adapter (host:port)")
		}
		if _, err := smtp.New(smtp.Options{Addr: c.SMTPHost, TLS: smtp.TLSNone}); err != nil {
			return fmt.Errorf("COURIER_SMTP_HOST: %v", err)
		}
		if c.SMTPPassword != "" && c.SMTPUsername == "" {
			return fmt.Errorf("COURIER_SMTP_USERNAME: is required when COURIER_SMTP_PASSWORD is set")
		}
	}
	if c.MailFrom == "" {
		return fmt.Errorf("COURIER_MAIL_FROM: is required (an address, optionally with a display name)")
	}
	if a, err := netmail.ParseAddress(c.MailFrom); err != nil || !strings.Contains(a.Address, "@") {
		return fmt.Errorf("COURIER_MAIL_FROM: must be an address such as \"Platform <no-reply@example.com>\", got %q", c.MailFrom)
	}
	if c.DatabaseURL == "" {
		return fmt.Errorf("DATABASE_URL: is required (postgres://… or sqlite:PATH)")
	}
	tokens, err := httpapi.ParseServiceTokens(c.ServiceTokens)
	if err != nil {
		return fmt.Errorf("COURIER_SERVICE_TOKENS: %v", err)
	}
	c.tokens = tokens
	if c.EventsURL != "" {
		if err := events.ValidateURL(c.EventsURL); err != nil {
			return fmt.Errorf("EVENTS_URL: %v", err)
		}
	}
	c.vapid = nil
	switch {
	case c.VAPIDPublicKey == "" && c.VAPIDPrivateKey == "":
		if c.VAPIDSubject != "" {
			return fmt.Errorf("COURIER_VAPID_SUBJECT: is set without COURIER_VAPID_PUBLIC_KEY and COURIER_VAPID_PRIVATE_KEY")
		}
	case c.VAPIDPublicKey == "":
		return fmt.Errorf("COURIER_VAPID_PUBLIC_KEY: is required with COURIER_VAPID_PRIVATE_KEY")
	case c.VAPIDPrivateKey == "":
		return fmt.Errorf("COURIER_VAPID_PRIVATE_KEY: is required with COURIER_VAPID_PUBLIC_KEY")
	default:
		v, err := push.ParseVAPID(c.VAPIDPublicKey, c.VAPIDPrivateKey, c.VAPIDSubject)
		if err != nil {
			return err
		}
		c.vapid = &v
	}
	return nil
}
