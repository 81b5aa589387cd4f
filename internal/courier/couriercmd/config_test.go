package couriercmd

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/courier/push"
)

var testKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	err := Command.Load(context.Background(), getenv, &cfg)
	return cfg, err
}

// baseEnv is a valid production configuration; cases change one thing.
func baseEnv() map[string]string {
	return map[string]string{
		"DATABASE_URL":           "sqlite:courier.db",
		"COURIER_SECRET_BOX_KEY": testKey,
		"COURIER_MAIL_ADAPTER":   "smtp",
		"COURIER_SMTP_HOST":      "smtp.example.com:587",
		"COURIER_MAIL_FROM":      "Platform <no-reply@example.com>",
		"COURIER_SERVICE_TOKENS": "identity:" + strings.Repeat("s", 32),
	}
}

func TestConfig(t *testing.T) {
	vapid, err := push.GenerateVAPID("mailto:push@example.com")
	if err != nil {
		t.Fatal(err)
	}
	other, err := push.GenerateVAPID("mailto:push@example.com")
	if err != nil {
		t.Fatal(err)
	}
	pair := func(public, private, subject string) map[string]string {
		return map[string]string{"COURIER_VAPID_PUBLIC_KEY": public, "COURIER_VAPID_PRIVATE_KEY": private, "COURIER_VAPID_SUBJECT": subject}
	}
	tests := []struct {
		name    string
		change  map[string]string
		wantErr string // the variable the one line must start with; "" for success
	}{
		{"OK", nil, ""},
		{"OKDevelopmentLocal", map[string]string{"COURIER_ENV": "development", "COURIER_MAIL_ADAPTER": "local", "COURIER_SMTP_HOST": ""}, ""},
		{"OKDisplayNameFrom", map[string]string{"COURIER_MAIL_FROM": "no-reply@example.com"}, ""},
		{"OKTLSImplicit", map[string]string{"COURIER_SMTP_TLS": "tls"}, ""},
		{"OKTLSNone", map[string]string{"COURIER_SMTP_TLS": "none"}, ""},
		{"ErrKeyMissing", map[string]string{"COURIER_SECRET_BOX_KEY": ""}, "COURIER_SECRET_BOX_KEY: is required"},
		{"ErrKeyShort", map[string]string{"COURIER_SECRET_BOX_KEY": base64.StdEncoding.EncodeToString([]byte("short"))}, "COURIER_SECRET_BOX_KEY: must be the base64"},
		{"ErrKeyNotBase64", map[string]string{"COURIER_SECRET_BOX_KEY": "not base64!"}, "COURIER_SECRET_BOX_KEY: must be the base64"},
		{"ErrAdapterUnsetInProduction", map[string]string{"COURIER_MAIL_ADAPTER": ""}, "COURIER_MAIL_ADAPTER: is required"},
		{"ErrLocalInProduction", map[string]string{"COURIER_MAIL_ADAPTER": "local"}, "COURIER_MAIL_ADAPTER: local"},
		{"ErrTestAdapterInProduction", map[string]string{"COURIER_MAIL_ADAPTER": "test"}, "COURIER_MAIL_ADAPTER: must be smtp"},
		{"ErrUnknownAdapterInDevelopment", map[string]string{"COURIER_ENV": "development", "COURIER_MAIL_ADAPTER": "pigeon"}, "COURIER_MAIL_ADAPTER: must be smtp or local"},
		{"ErrSMTPHostMissing", map[string]string{"COURIER_SMTP_HOST": ""}, "COURIER_SMTP_HOST: is required"},
		{"ErrSMTPHostNoPort", map[string]string{"COURIER_SMTP_HOST": "smtp.example.com"}, "COURIER_SMTP_HOST: must be host:port"},
		{"ErrSMTPTLS", map[string]string{"COURIER_SMTP_TLS": "ssl"}, "COURIER_SMTP_TLS: must be one of starttls, tls, none"},
		{"ErrFromMissing", map[string]string{"COURIER_MAIL_FROM": ""}, "COURIER_MAIL_FROM: is required"},
		{"ErrFromMalformed", map[string]string{"COURIER_MAIL_FROM": "Platform no-reply"}, "COURIER_MAIL_FROM: must be an address"},
		{"ErrDatabaseURL", map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL:"},
		{"ErrDatabaseURLMissing", map[string]string{"DATABASE_URL": ""}, "DATABASE_URL: is required"},
		{"ErrPort", map[string]string{"PORT": "http"}, "PORT: must be a port number"},
		{"ErrDatabaseTimeout", map[string]string{"DATABASE_TIMEOUT": "5"}, "DATABASE_TIMEOUT:"},
		{"ErrServiceTokenShortSecret", map[string]string{"COURIER_SERVICE_TOKENS": "identity:short"}, "COURIER_SERVICE_TOKENS: entry 1 (identity): the secret must be at least 32"},
		{"ErrServiceTokenMalformed", map[string]string{"COURIER_SERVICE_TOKENS": "identity"}, "COURIER_SERVICE_TOKENS: entry 1 must be name:secret"},
		{"ErrEventsURL", map[string]string{"EVENTS_URL": "http://x"}, "EVENTS_URL:"},
		{"OKVAPIDPair", pair(vapid.PublicKey, vapid.PrivateKey, "mailto:push@example.com"), ""},
		{"OKVAPIDHTTPSSubject", pair(vapid.PublicKey, vapid.PrivateKey, "https://example.com/contact"), ""},
		{"ErrVAPIDSubjectAlone", pair("", "", "mailto:push@example.com"), "COURIER_VAPID_SUBJECT: is set without"},
		{"ErrVAPIDPublicAlone", pair(vapid.PublicKey, "", "mailto:push@example.com"), "COURIER_VAPID_PRIVATE_KEY: is required"},
		{"ErrVAPIDPrivateAlone", pair("", vapid.PrivateKey, "mailto:push@example.com"), "COURIER_VAPID_PUBLIC_KEY: is required"},
		{"ErrVAPIDHalvesDiffer", pair(other.PublicKey, vapid.PrivateKey, "mailto:push@example.com"), "COURIER_VAPID_PUBLIC_KEY: is not the public half"},
		{"ErrVAPIDPrivateNotAKey", pair(vapid.PublicKey, "bm90IGEga2V5", "mailto:push@example.com"), "COURIER_VAPID_PRIVATE_KEY: must be"},
		{"ErrVAPIDNoSubject", pair(vapid.PublicKey, vapid.PrivateKey, ""), "COURIER_VAPID_SUBJECT: is required"},
		{"ErrVAPIDHTTPSubject", pair(vapid.PublicKey, vapid.PrivateKey, "http://example.com"), "COURIER_VAPID_SUBJECT: must be"},
		{"ErrIdentityIssuer", map[string]string{"IDENTITY_ISSUER": "identity"}, "IDENTITY_ISSUER: must be an absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tt.change {
				env[k] = v
			}
			cfg, err := loadConfig(envOf(env))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("config.Load: %v", err)
				}
				if cfg.Port != 4000 {
					t.Errorf("Port = %d, want the default 4000", cfg.Port)
				}
				if on := tt.change["COURIER_VAPID_PUBLIC_KEY"] != ""; cfg.Push() != on {
					t.Errorf("Push() = %v, want %v", cfg.Push(), on)
				}
				return
			}
			if err == nil {
				t.Fatalf("config.Load succeeded, want an error starting %q", tt.wantErr)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tt.wantErr) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line starting %q", msg, tt.wantErr)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), strings.Repeat("s", 32)) || strings.Contains(err.Error(), vapid.PrivateKey) {
				t.Errorf("error %q repeats a secret", err)
			}
		})
	}
}
