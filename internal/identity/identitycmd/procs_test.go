package identitycmd

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestHashingProcsFollowsGOMAXPROCS(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"GOMAXPROCS unset", nil, true},
		{"GOMAXPROCS set", map[string]string{"GOMAXPROCS": "4"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.HashingProcs != tt.want {
				t.Errorf("HashingProcs = %v, want %v", cfg.HashingProcs, tt.want)
			}
		})
	}
}

func TestHashingProcs(t *testing.T) {
	t.Cleanup(func() { runtime.GOMAXPROCS(startProcs) })
	for range 2 { // a second identity in the process sets the same, not one more
		hashingProcs(true, 1)
		if got := runtime.GOMAXPROCS(0); got != startProcs+1 {
			t.Fatalf("contended: GOMAXPROCS = %d, want %d (%d at start, one hash while serving)", got, startProcs+1, startProcs)
		}
		hashingProcs(false, 1)
		if got := runtime.GOMAXPROCS(0); got != startProcs {
			t.Fatalf("alone: GOMAXPROCS = %d, want %d, as at start", got, startProcs)
		}
	}
}

// TestServiceRaisesProcsWhileContended: identity's service, as the command
// wires it, raises GOMAXPROCS when a sign-in overlaps another request, and
// only when HashingProcs is set.
func TestServiceRaisesProcsWhileContended(t *testing.T) {
	t.Cleanup(func() { runtime.GOMAXPROCS(startProcs) })
	db := sqltest.Open(t, sqldb.SQLite, sqlstore.Migrations)
	for _, on := range []bool{false, true} {
		runtime.GOMAXPROCS(startProcs)
		cfg := Config{MasterKey: bytes.Repeat([]byte{7}, 32), HashingProcs: on}
		svc, _, err := newService(context.Background(), cfg, db)
		if err != nil {
			t.Fatal(err)
		}
		done := svc.Serving()
		// An unknown address is hashed too (against the dummy), so it
		// takes a hash slot like any sign-in.
		if _, _, err := svc.Login(context.Background(), "nobody@example.com", "not the password"); err == nil {
			t.Fatal("Login of an unknown address succeeded")
		}
		done()
		want := startProcs
		if on {
			want += max(1, startProcs/2) // the hashes allowed while serving
		}
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("HashingProcs %v: GOMAXPROCS after a contended sign-in = %d, want %d", on, got, want)
		}
	}
}
