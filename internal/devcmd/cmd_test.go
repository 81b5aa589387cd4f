package devcmd

import (
	"testing"

	"github.com/platformco/platform/internal/cli"
)

func TestOnly(t *testing.T) {
	shell := map[string]string{
		"DATABASE_URL": "postgres://elsewhere/db",
		"LOG_LEVEL":    "debug",
		"GOMAXPROCS":   "4",
		"PORT":         "9999",
	}
	getenv := only(cli.Env{Getenv: func(k string) string { return shell[k] }}, map[string]string{"PORT": "8081"})
	tests := []struct{ key, want string }{
		{"PORT", "8081"},       // the service's own value wins
		{"DATABASE_URL", ""},   // the shell's does not leak in
		{"LOG_LEVEL", "debug"}, // process-wide: passed through
		{"GOMAXPROCS", "4"},    // process-wide: identity leaves a set one alone
	}
	for _, tt := range tests {
		if got := getenv(tt.key); got != tt.want {
			t.Errorf("getenv(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
