package config

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type sample struct {
	Port     int           `env:"PORT, default=8080" rule:"port"`
	Timeout  time.Duration `env:"TIMEOUT, default=5s" rule:"positive"`
	Workers  int           `env:"WORKERS, default=0" rule:"nonnegative"`
	Issuer   string        `env:"ISSUER" rule:"url"`
	Debug    string        `env:"DEBUG_ADDR" rule:"loopback"`
	Key      Key           `env:"MASTER_KEY" rule:"key32"`
	Level    slog.Level    `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
	Retries  int           `env:"RETRIES, default=3"`
	Database string        `env:"DATABASE_URL"`
}

// Validate makes MASTER_KEY required with DATABASE_URL, the cross-field
// kind of rule a service states on its Config.
func (s *sample) Validate() error {
	if s.Database != "" && s.Key == nil {
		return errors.New("MASTER_KEY: is required whenever DATABASE_URL is set")
	}
	return nil
}

const key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, s sample)
		wantErr string
	}{
		{name: "Defaults", check: func(t *testing.T, s sample) {
			if s.Port != 8080 || s.Timeout != 5*time.Second || s.Level != slog.LevelInfo || s.Retries != 3 || s.Key != nil {
				t.Errorf("got %+v, want the defaults", s)
			}
		}},
		{name: "Set", env: map[string]string{"PORT": " 9000 ", "TIMEOUT": "90s", "ISSUER": "https://id.example", "DEBUG_ADDR": "[::1]:0", "MASTER_KEY": key, "LOG_LEVEL": "debug"},
			check: func(t *testing.T, s sample) {
				if s.Port != 9000 || s.Timeout != 90*time.Second || s.Issuer != "https://id.example" || s.Debug != "[::1]:0" || len(s.Key) != 32 || s.Level != slog.LevelDebug {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "BlankIsUnset", env: map[string]string{"PORT": "  "}, check: func(t *testing.T, s sample) {
			if s.Port != 8080 {
				t.Errorf("got port %d, want 8080", s.Port)
			}
		}},
		{name: "ErrPort", env: map[string]string{"PORT": "70000"}, wantErr: `PORT: must be a port number from 0 to 65535, got "70000"`},
		{name: "ErrDuration", env: map[string]string{"TIMEOUT": "soon"}, wantErr: `TIMEOUT: must be a positive Go duration such as 5s, got "soon"`},
		{name: "ErrDurationZero", env: map[string]string{"TIMEOUT": "0s"}, wantErr: "TIMEOUT: must be a positive Go duration"},
		{name: "ErrNegative", env: map[string]string{"WORKERS": "-1"}, wantErr: "WORKERS: must be a zero or positive whole number"},
		{name: "ErrURL", env: map[string]string{"ISSUER": "not-a-url"}, wantErr: `ISSUER: must be an absolute http(s) URL`},
		{name: "ErrURLScheme", env: map[string]string{"ISSUER": "ftp://x"}, wantErr: "ISSUER: must be an absolute http(s) URL"},
		{name: "ErrLoopback", env: map[string]string{"DEBUG_ADDR": "0.0.0.0:6060"}, wantErr: "DEBUG_ADDR: must be a loopback host:port"},
		{name: "ErrKeyWithoutDatabase", env: map[string]string{"MASTER_KEY": "c2hvcnQ="}, wantErr: "MASTER_KEY: must be the base64 encoding of exactly 32 bytes"},
		{name: "ErrLevel", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: `LOG_LEVEL: must be one of debug, info, warn, error, got "loud"`},
		{name: "ErrLevelOffset", env: map[string]string{"LOG_LEVEL": "info+2"}, wantErr: "LOG_LEVEL: must be one of"},
		{name: "ErrDecodeWithoutRule", env: map[string]string{"RETRIES": "many"}, wantErr: "RETRIES: cannot be read"},
		{name: "ErrValidate", env: map[string]string{"DATABASE_URL": "sqlite:x.db"}, wantErr: "MASTER_KEY: is required whenever DATABASE_URL is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sample
			err := Load(context.Background(), func(k string) string { return tt.env[k] }, &s)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				tt.check(t, s)
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to begin %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err spans lines: %q", err)
			}
			if strings.Contains(err.Error(), "c2hvcnQ") {
				t.Errorf("the error echoes a secret value: %q", err)
			}
		})
	}
}

func TestLoadRequired(t *testing.T) {
	var s struct {
		URL string `env:"BOX_URL, required"`
	}
	err := Load(context.Background(), func(string) string { return "" }, &s)
	if err == nil || err.Error() != "BOX_URL: is required" {
		t.Fatalf("err = %v, want %q", err, "BOX_URL: is required")
	}
}
