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
