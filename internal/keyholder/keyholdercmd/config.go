package keyholdercmd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/sqldb"
)

// Config is keyholder's configuration: each field's variable, default and
// requirement are on its tag; the rules envconfig cannot state are in
// validate.
type Config struct {
	Port        int    `env:"PORT, default=8084"`
	DatabaseURL string `env:"DATABASE_URL, required"`
	// MetricsAddr (METRICS_ADDR) serves Prometheus metrics at /metrics on
	// a listener of its own; empty serves none.
	MetricsAddr string `env:"METRICS_ADDR"`
	// OTLPEndpoint (OTEL_EXPORTER_OTLP_ENDPOINT) exports traces over
	// OTLP/HTTP; empty exports none.
	OTLPEndpoint     string        `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	BoxURL           string        `env:"KEYHOLDER_BOX_URL, required"`
	IdentityURL      string        `env:"KEYHOLDER_IDENTITY_URL"`
	RegistryURL      string        `env:"KEYHOLDER_REGISTRY_URL, required"`
	RegistryUsername string        `env:"KEYHOLDER_REGISTRY_USERNAME"`
	RegistryPassword string        `env:"KEYHOLDER_REGISTRY_PASSWORD"`
	CredentialTTL    time.Duration `env:"KEYHOLDER_CREDENTIAL_TTL, default=1h"`
	PublicHost       string        `env:"KEYHOLDER_PUBLIC_HOST"`
	IdentityTimeout  time.Duration `env:"KEYHOLDER_IDENTITY_TIMEOUT, default=2s"`
}

// LoadConfig reads and validates keyholder's settings from getenv. An
// error is one line naming the variable and the rule (never echoing a
// password).
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
	if cfg.PublicHost == "" {
		cfg.PublicHost = fmt.Sprintf("localhost:%d", cfg.Port)
	}
	return cfg, nil
}

// nameVariable rewrites envconfig's "Field: problem" into "VARIABLE: rule".
func nameVariable(err error) error {
	msg := err.Error()
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		if !strings.HasPrefix(msg, f.Name+":") {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		switch {
		case strings.Contains(msg, envconfig.ErrMissingRequired.Error()):
			return fmt.Errorf("%s: is required", name)
		case f.Type == reflect.TypeFor[time.Duration]():
			return fmt.Errorf("%s: must be a Go duration such as 1h", name)
		case f.Type.Kind() == reflect.Int:
			return fmt.Errorf("%s: must be a whole number", name)
		default:
			return fmt.Errorf("%s: cannot be read", name)
		}
	}
	return err
}

func (c Config) validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("PORT: must be a port number from 0 to 65535, got %d", c.Port)
	}
	if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %v", err)
	}
	for _, u := range []struct{ name, v string }{
		{"KEYHOLDER_BOX_URL", c.BoxURL}, {"KEYHOLDER_IDENTITY_URL", c.IdentityURL}, {"KEYHOLDER_REGISTRY_URL", c.RegistryURL},
	} {
		if u.v == "" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
			return fmt.Errorf("%s: must be an absolute http(s) URL without credentials", u.name)
		}
	}
	if c.CredentialTTL <= 0 || c.CredentialTTL > keyholder.MaxCredentialTTL {
		return fmt.Errorf("KEYHOLDER_CREDENTIAL_TTL: must be a positive Go duration of at most 24h, got %s", c.CredentialTTL)
	}
	if c.IdentityTimeout <= 0 {
		return fmt.Errorf("KEYHOLDER_IDENTITY_TIMEOUT: must be a positive Go duration, got %s", c.IdentityTimeout)
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
