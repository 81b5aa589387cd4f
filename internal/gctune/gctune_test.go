package gctune

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	tests := []struct {
		name        string
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{"defaults", nil, Percent, Limit},
		// The runtime applied these at start; here the test process's
		// settings stand in for them and must be left alone.
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, Limit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, Percent, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			Apply(func(k string) string { return tt.env[k] })
			if got := debug.SetGCPercent(-1); got != tt.wantPercent {
				t.Errorf("GC percent in force = %d, want %d", got, tt.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tt.wantLimit {
				t.Errorf("memory limit in force = %d, want %d", got, tt.wantLimit)
			}
		})
	}
}
