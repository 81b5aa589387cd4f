package keyholdercmd

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/service"
)

// Config is keyholder's configuration, read by config.Load: each field's
// variable, default and rule are on its tag; Validate holds the rules that
// span fields.
type Config struct {
	// Base is PORT, LOG_LEVEL, DATABASE_URL (required), DATABASE_TIMEOUT
	// and telemetry.
	service.Base
	BoxURL string `env:"KEYHOLDER_BOX_URL, required" rule:"url"`
	// IdentityURL empty makes GET /v1/accounts/{id}/pulls answer 503.
	IdentityURL      string        `env:"KEYHOLDER_IDENTITY_URL" rule:"url"`
	RegistryURL      string        `env:"KEYHOLDER_REGISTRY_URL, required" rule:"url"`
	RegistryUsername string        `env:"KEYHOLDER_REGISTRY_USERNAME"`
	RegistryPassword string        `env:"KEYHOLDER_REGISTRY_PASSWORD"`
	CredentialTTL    time.Duration `env:"KEYHOLDER_CREDENTIAL_TTL, default=1h" rule:"positive"`
	// PublicHost is the registry host customers pull from; localhost:PORT
	// when unset.
	PublicHost      string        `env:"KEYHOLDER_PUBLIC_HOST"`
	IdentityTimeout time.Duration `env:"KEYHOLDER_IDENTITY_TIMEOUT, default=2s" rule:"positive"`
}

// Validate implements config.Validator.
func (c *Config) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.PublicHost == "" {
		c.PublicHost = fmt.Sprintf("localhost:%d", c.Port)
	}
	return nil
}

func (c *Config) validate() error {
	if c.DatabaseURL == "" {
		return fmt.Errorf("DATABASE_URL: is required")
	}
	for _, u := range []struct{ name, v string }{
		{"KEYHOLDER_BOX_URL", c.BoxURL}, {"KEYHOLDER_IDENTITY_URL", c.IdentityURL}, {"KEYHOLDER_REGISTRY_URL", c.RegistryURL},
	} {
		// The url rule has checked the rest; credentials belong in their own variables.
		if p, err := url.Parse(u.v); err == nil && p.User != nil {
			return fmt.Errorf("%s: must be an absolute http(s) URL without credentials", u.name)
		}
	}
	if c.CredentialTTL > keyholder.MaxCredentialTTL {
		return fmt.Errorf("KEYHOLDER_CREDENTIAL_TTL: must be a positive Go duration of at most 24h, got %s", c.CredentialTTL)
	}
	if (c.RegistryUsername == "") != (c.RegistryPassword == "") {
		return fmt.Errorf("KEYHOLDER_REGISTRY_PASSWORD: is required together with KEYHOLDER_REGISTRY_USERNAME")
	}
	if c.PublicHost != "" {
		if strings.ContainsAny(c.PublicHost, "/ @\"") {
			return fmt.Errorf("KEYHOLDER_PUBLIC_HOST: must be a host name or host:port, got %q", c.PublicHost)
		}
		if h, _, err := net.SplitHostPort(c.PublicHost); err == nil && h == "" {
			return fmt.Errorf("KEYHOLDER_PUBLIC_HOST: must name a host, got %q", c.PublicHost)
		}
	}
	return nil
}
