package devcmd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/config"
)

// TestBoxMasterKeyIsGeneratedOnce: platform dev gives box a key of its own
// in the data dir, private to the user, kept across runs, and box's
// configuration takes it.
func TestBoxMasterKeyIsGeneratedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, boxMasterKeyFile)
	key, err := loadOrCreateMasterKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("%s mode = %o, want 600", boxMasterKeyFile, mode)
	}
	again, err := loadOrCreateMasterKey(path)
	if err != nil || again != key {
		t.Errorf("second run key = %q, %v; want the first key kept", again, err)
	}
	identityKey, err := loadOrCreateMasterKey(filepath.Join(dir, masterKeyFile))
	if err != nil || identityKey == key {
		t.Errorf("identity's key = %q, %v; want a key of its own", identityKey, err)
	}
	var cfg boxcmd.Config
	err = config.Load(context.Background(), func(k string) string {
		return map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "box.db"), "BOX_MASTER_KEY": key}[k]
	}, &cfg)
	if err != nil || len(cfg.MasterKey) != 32 {
		t.Errorf("box config with the generated key = %d-byte key, %v; want 32 bytes", len(cfg.MasterKey), err)
	}
}
