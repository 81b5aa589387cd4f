package musecmd

import (
	"context"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	tests := []struct {
		name string
		env  map[string]string
		want string // "" for OK, else a part of the error
	}{
		{"OK", map[string]string{"MUSE_VAULT_KEY": key}, ""},
		{"OKEchoInDevelopment", map[string]string{"MUSE_VAULT_KEY": key, "MUSE_ENV": "development", "MUSE_ECHO_ALIAS": "echo"}, ""},
		{"ErrNoVaultKey", map[string]string{}, "MUSE_VAULT_KEY"},
		{"ErrVaultKeyShort", map[string]string{"MUSE_VAULT_KEY": "c2hvcnQ="}, "MUSE_VAULT_KEY"},
		{"ErrVaultKeyNotBase64", map[string]string{"MUSE_VAULT_KEY": "not base64!"}, "MUSE_VAULT_KEY"},
		{"ErrEchoOutsideDevelopment", map[string]string{"MUSE_VAULT_KEY": key, "MUSE_ECHO_ALIAS": "echo"}, "MUSE_ECHO_ALIAS"},
		{"ErrBadTimeout", map[string]string{"MUSE_VAULT_KEY": key, "MUSE_UPSTREAM_TIMEOUT": "soon"}, "MUSE_UPSTREAM_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			err := Command.Load(context.Background(), func(k string) string { return tt.env[k] }, &cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Load = %v, want an error naming %s", err, tt.want)
			}
			if tt.want == "" && cfg.Port != DefaultPort {
				t.Errorf("PORT default = %d, want %d", cfg.Port, DefaultPort)
			}
		})
	}
}
