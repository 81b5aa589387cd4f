package devcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/courier/couriercmd"
)

// TestCourierConfig: the quick start's courier is valid configuration,
// uses the local adapter under the data dir, keeps its key 0600 and
// reuses it on the next start.
func TestCourierConfig(t *testing.T) {
	dir := t.TempDir()
	env := cli.Env{Getenv: func(string) string { return "" }}
	cfg, err := courierConfig(context.Background(), env, dir, "nats://127.0.0.1:4222", "")
	if err != nil {
		t.Fatalf("courierConfig: %v", err)
	}
	if cfg.MailAdapter != couriercmd.AdapterLocal || !cfg.Development() || cfg.LocalDir != filepath.Join(dir, "mail") || cfg.Port != courierPort {
		t.Errorf("config = adapter %s, development %v, dir %s, port %d", cfg.MailAdapter, cfg.Development(), cfg.LocalDir, cfg.Port)
	}
	info, err := os.Stat(filepath.Join(dir, courierKeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("courier key: %v, mode %v; want 0600", err, info.Mode())
	}
	again, err := courierConfig(context.Background(), env, dir, "nats://127.0.0.1:4222", "")
	if err != nil || string(again.SecretBoxKey) != string(cfg.SecretBoxKey) {
		t.Errorf("second start: %v, key changed = %v", err, string(again.SecretBoxKey) != string(cfg.SecretBoxKey))
	}
	if !cfg.Push() || again.VAPIDPublicKey != cfg.VAPIDPublicKey || again.VAPIDPrivateKey != cfg.VAPIDPrivateKey {
		t.Errorf("push on = %v; VAPID pair kept across starts = %v", cfg.Push(), again.VAPIDPublicKey == cfg.VAPIDPublicKey)
	}
	if info, err := os.Stat(filepath.Join(dir, courierVAPIDFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("VAPID file: %v; want 0600", err)
	}
	if s := CourierServiceSecret(strings.Repeat("k", 44)); len(s) < 32 {
		t.Errorf("service secret %q is shorter than courier accepts", s)
	}
}

// TestVAPIDFileRefusedNotReplaced: a VAPID file that holds no valid pair
// stops the quick start and stays as it was: the browsers subscribed
// with its key.
func TestVAPIDFileRefusedNotReplaced(t *testing.T) {
	for _, tt := range []struct{ name, content string }{
		{"NotJSON", "not json\n"},
		{"HalvesDiffer", `{"public_key":"BOr4ETyJ9rErzlCiZl0cpzW_OC1K8jcK5xC3p7I8YHpE7aR3f1pQw4RsSGkqaOc2aLkDk0n6o2b1uHgQZfqR6Bo","private_key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE"}` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), courierVAPIDFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadOrCreateVAPID(path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("loadOrCreateVAPID = %v, want an error naming %s", err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("the file was replaced: %q", b)
			}
		})
	}
}
