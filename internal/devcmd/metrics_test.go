package devcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/identity/identitycmd"
)

func TestMetricsAddrs(t *testing.T) {
	tests := []struct {
		name, value string
		want        map[string]string
		wantErr     string
	}{
		{"Unset", "", map[string]string{}, ""},
		{"Consecutive", "127.0.0.1:9100", map[string]string{"identity": "127.0.0.1:9100", "box": "127.0.0.1:9101", "gateway": "127.0.0.1:9102",
			"courier": "127.0.0.1:9103", "keyholder": "127.0.0.1:9104", "parlor": "127.0.0.1:9105", "billing": "127.0.0.1:9106", "darkroom": "127.0.0.1:9107",
			"pantry": "127.0.0.1:9108", "muse": "127.0.0.1:9109"}, ""},
		{"AnyFreePort", "127.0.0.1:0", map[string]string{"identity": "127.0.0.1:0", "box": "127.0.0.1:0", "gateway": "127.0.0.1:0",
			"courier": "127.0.0.1:0", "keyholder": "127.0.0.1:0", "parlor": "127.0.0.1:0", "billing": "127.0.0.1:0", "darkroom": "127.0.0.1:0",
			"pantry": "127.0.0.1:0", "muse": "127.0.0.1:0"}, ""},
		{"ErrNoPort", "localhost", nil, "METRICS_ADDR: must be host:port"},
		{"ErrNoRoom", "127.0.0.1:65533", nil, "METRICS_ADDR: must be host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := metricsAddrs(cli.Env{Getenv: func(k string) string { return map[string]string{"METRICS_ADDR": tt.value}[k] }})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestEmbeddedServiceReadsItsMetricsAddr: the address reaches the
// service's Config (only() drops the shell's METRICS_ADDR otherwise).
func TestEmbeddedServiceReadsItsMetricsAddr(t *testing.T) {
	shell := cli.Env{Getenv: func(k string) string { return map[string]string{"METRICS_ADDR": "127.0.0.1:9100"}[k] }}
	addrs, err := metricsAddrs(shell)
	if err != nil {
		t.Fatal(err)
	}
	var cfg identitycmd.Config
	if err := config.Load(context.Background(), only(shell, map[string]string{"METRICS_ADDR": addrs["identity"]}), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsAddr != "127.0.0.1:9100" {
		t.Errorf("MetricsAddr = %q, want 127.0.0.1:9100", cfg.MetricsAddr)
	}
}

// TestPrivateFiles: what a library creates 0666/0777 (the embedded
// registry's storage driver) is 0600/0700 while platform dev runs.
func TestPrivateFiles(t *testing.T) {
	dir := t.TempDir()
	restore := privateFiles()
	sub := filepath.Join(dir, "registry", "docker")
	err := os.MkdirAll(sub, 0o777)
	if err == nil {
		err = os.WriteFile(filepath.Join(sub, "data"), []byte("blob"), 0o666)
	}
	restore()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{sub: 0o700 | os.ModeDir, filepath.Join(sub, "data"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}
