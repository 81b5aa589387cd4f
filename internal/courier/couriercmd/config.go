package couriercmd

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/sqldb"
)

// Mail adapters of COURIER_MAIL_ADAPTER.
const (
	AdapterSMTP  = "smtp"
	AdapterLocal = "local"
)

// Config is courier's configuration: each field's variable, default and
// rule are on its tag; validate adds the rules that span fields
// (courier.md section 1). Every refusal is one line naming the variable.
type Config struct {
	Port            int           `env:"PORT, default=4000"`
	DatabaseURL     string        `env:"DATABASE_URL"`
	DatabaseTimeout time.Duration `env:"DATABASE_TIMEOUT, default=5s"`
	// MetricsAddr (METRICS_ADDR) serves Prometheus metrics at /metrics on
	// a listener of its own; empty serves none.
	MetricsAddr string `env:"METRICS_ADDR"`
	// Env is COURIER_ENV; only "development" admits the local adapter and
	// plain-http loopback webhook endpoints.
	Env          string `env:"COURIER_ENV, default=production"`
	SecretBoxKey Key32  `env:"COURIER_SECRET_BOX_KEY"`
	MailAdapter  string `env:"COURIER_MAIL_ADAPTER"`
	SMTPHost     string `env:"COURIER_SMTP_HOST"`
	SMTPUsername string `env:"COURIER_SMTP_USERNAME"`
	SMTPPassword string `env:"COURIER_SMTP_PASSWORD"`
	SMTPTLS      string `env:"COURIER_SMTP_TLS, default=starttls"`
	MailFrom     string `env:"COURIER_MAIL_FROM"`
	LocalDir     string `env:"COURIER_LOCAL_DIR, default=data/mail"`
	// ServiceTokens is COURIER_SERVICE_TOKENS: name:secret,…
	ServiceTokens   string        `env:"COURIER_SERVICE_TOKENS"`
	IdentityIssuer  string        `env:"IDENTITY_ISSUER"`
	IdentityURL     string        `env:"COURIER_IDENTITY_URL"`
	IdentityTimeout time.Duration `env:"COURIER_IDENTITY_TIMEOUT, default=2s"`
	EventsURL       string        `env:"EVENTS_URL"`

	tokens httpapi.ServiceTokens
}

// Key32 is a secret given as the base64 encoding of exactly 32 bytes.
type Key32 []byte

// EnvDecode implements envconfig.Decoder; the error never echoes the value.
func (k *Key32) EnvDecode(v string) error {
	if v == "" {
		// Unset: go-envconfig still asks the decoder; validate says it is required.
		return nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(strings.TrimSpace(v)); err == nil {
			if len(b) != 32 {
				break
			}
			*k = b
			return nil
		}
	}
	return errors.New("must be the base64 encoding of exactly 32 bytes")
}

// Development reports whether COURIER_ENV is development.
func (c Config) Development() bool { return c.Env == "development" }

// LoadConfig reads and validates courier's settings from getenv.
func LoadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	lookup := envconfig.LookuperFunc(func(k string) (string, bool) {
		v := strings.TrimSpace(getenv(k))
		return v, v != ""
	})
	if err := envconfig.ProcessWith(context.Background(), &envconfig.Config{Target: &cfg, Lookuper: lookup}); err != nil {
		return Config{}, nameVariable(err)
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// nameVariable rewrites go-envconfig's "Field: problem" as "VARIABLE:
// problem", so the line names what the operator sets.
func nameVariable(err error) error {
	msg := err.Error()
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(msg, f.Name+": "); ok {
			if f.Type == reflect.TypeFor[time.Duration]() {
				return fmt.Errorf("%s: must be a Go duration such as 5s", name)
			}
			if f.Type.Kind() == reflect.Int {
				return fmt.Errorf("%s: must be a whole number", name)
			}
			return fmt.Errorf("%s: %s", name, rest)
		}
	}
	return err
}

func (c *Config) validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("PORT: must be a port number from 0 to 65535")
	case c.DatabaseTimeout <= 0:
		return fmt.Errorf("DATABASE_TIMEOUT: must be a positive Go duration such as 5s")
	case c.IdentityTimeout <= 0:
		return fmt.Errorf("COURIER_IDENTITY_TIMEOUT: must be a positive Go duration such as 2s")
	case len(c.SecretBoxKey) == 0:
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
		switch c.SMTPTLS {
		case smtp.TLSStartTLS, smtp.TLSImplicit, smtp.TLSNone:
		default:
			return fmt.Errorf("COURIER_SMTP_TLS: must be starttls, tls or none, got %q", c.SMTPTLS)
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
	if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %v", err)
	}
	tokens, err := httpapi.ParseServiceTokens(c.ServiceTokens)
	if err != nil {
		return fmt.Errorf("COURIER_SERVICE_TOKENS: %v", err)
	}
	c.tokens = tokens
	for name, v := range map[string]string{"IDENTITY_ISSUER": c.IdentityIssuer, "COURIER_IDENTITY_URL": c.IdentityURL} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: must be an absolute http(s) URL, got %q", name, v)
		}
	}
	if c.EventsURL != "" {
		if err := events.ValidateURL(c.EventsURL); err != nil {
			return fmt.Errorf("EVENTS_URL: %v", err)
		}
	}
	return nil
}
