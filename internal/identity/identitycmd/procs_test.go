package identitycmd

import (
	"runtime"
	"testing"
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
