package devcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
)

// TestDarkroomConfig: the quick start's darkroom is valid configuration
// in development over the embedded store, on :8088, with its link key
// kept 0600 and reused on the next start.
func TestDarkroomConfig(t *testing.T) {
	dir := t.TempDir()
	env := cli.Env{Getenv: func(string) string { return "" }}
	cfg, err := darkroomConfig(t.Context(), env, dir, "http://127.0.0.1:8081", "http://"+devS3Addr, "")
	if err != nil {
		t.Fatalf("darkroomConfig: %v", err)
	}
	if cfg.Env != darkroomcmd.Development || cfg.Port != darkroomPort || cfg.Endpoint != "http://"+devS3Addr ||
		cfg.Region != "auto" || len(cfg.URLKey) != 32 {
		t.Errorf("config = env %s, port %d, endpoint %s, region %s, key %d bytes", cfg.Env, cfg.Port, cfg.Endpoint, cfg.Region, len(cfg.URLKey))
	}
	if info, err := os.Stat(filepath.Join(dir, darkroomKeyURL)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("link key: %v; want 0600", err)
	}
	again, err := darkroomConfig(t.Context(), env, dir, "http://127.0.0.1:8081", "http://"+devS3Addr, "")
	if err != nil || !bytes.Equal(again.URLKey, cfg.URLKey) {
		t.Errorf("second start: %v, key changed = %v", err, !bytes.Equal(again.URLKey, cfg.URLKey))
	}
}
