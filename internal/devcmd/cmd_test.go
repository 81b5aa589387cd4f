package devcmd

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
)

func TestOnly(t *testing.T) {
	shell := map[string]string{
		"DATABASE_URL": "postgres://elsewhere/db",
		"LOG_LEVEL":    "debug",
		"PORT":         "9999",
	}
	getenv := only(cli.Env{Getenv: func(k string) string { return shell[k] }}, map[string]string{"PORT": "8081"})
	tests := []struct{ key, want string }{
		{"PORT", "8081"},       // the service's own value wins
		{"DATABASE_URL", ""},   // the shell's does not leak in
		{"LOG_LEVEL", "debug"}, // process-wide: passed through
	}
	for _, tt := range tests {
		if got := getenv(tt.key); got != tt.want {
			t.Errorf("getenv(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestListenLoopbackByDefault: the quick start faces only this machine
// unless --listen says otherwise.
func TestListenLoopbackByDefault(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		loopback bool
	}{
		{"Default", nil, true},
		{"EveryInterface", []string{"--listen", "0.0.0.0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseFlags(tt.args, cli.Env{Stderr: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			lns, err := listenAll(opts.listen, []int{0})
			if err != nil {
				t.Fatal(err)
			}
			defer lns[0].Close()
			ip := lns[0].Addr().(*net.TCPAddr).IP
			if ip.IsLoopback() != tt.loopback {
				t.Errorf("listening on %v, want loopback %v", ip, tt.loopback)
			}
		})
	}
	if _, err := parseFlags([]string{"--listen", "0.0.0.0:80"}, cli.Env{Stderr: io.Discard}); !cli.IsUsage(err) {
		t.Errorf("--listen with a port: %v, want a usage error", err)
	}
}

func TestReachAt(t *testing.T) {
	tests := []struct{ listen, dial, named string }{
		{"127.0.0.1", "127.0.0.1", "localhost"},
		{"0.0.0.0", "127.0.0.1", "localhost"},
		{"::", "127.0.0.1", "localhost"},
		{"192.0.2.7", "192.0.2.7", "192.0.2.7"},
		{"2001:db8::1", "[2001:db8::1]", "[2001:db8::1]"},
	}
	for _, tt := range tests {
		if dial, named := reachAt(tt.listen); dial != tt.dial || named != tt.named {
			t.Errorf("reachAt(%q) = %q, %q, want %q, %q", tt.listen, dial, named, tt.dial, tt.named)
		}
	}
}

// TestMasterKeyPrivate: the generated master key is readable by its owner
// only, in a data directory that already exists.
func TestMasterKeyPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, masterKeyFile)
	if _, err := loadOrCreateMasterKey(path); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("%s mode %v, want -rw-------", masterKeyFile, got)
	}
}

// TestGatewayTrustsParlor: the quick start's gateway believes the
// browser's address parlor forwards from parlor's address (where it dials
// the gateway from), and from no other.
func TestGatewayTrustsParlor(t *testing.T) {
	for _, listen := range []string{"127.0.0.1", "0.0.0.0", "192.0.2.7", "2001:db8::1"} {
		dial, _ := reachAt(listen)
		var cfg gatewaycmd.Config
		err := config.Load(context.Background(), func(k string) string {
			return map[string]string{"IDENTITY_URL": "http://" + dial + ":8081", "TRUSTED_PROXIES": parlorAddr(dial)}[k]
		}, &cfg)
		if err != nil {
			t.Fatalf("listen %s: %v", listen, err)
		}
		trusts := func(addr string) bool {
			for _, p := range cfg.TrustedNets {
				if p.Contains(netip.MustParseAddr(addr)) {
					return true
				}
			}
			return false
		}
		if parlor := strings.Trim(dial, "[]"); !trusts(parlor) {
			t.Errorf("listen %s: the gateway does not trust parlor's address %s (%v)", listen, parlor, cfg.TrustedNets)
		}
		if trusts("198.51.100.1") {
			t.Errorf("listen %s: the gateway trusts a browser's address (%v)", listen, cfg.TrustedNets)
		}
	}
}
