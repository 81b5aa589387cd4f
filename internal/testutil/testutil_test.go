package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	Eventually(t, 5*time.Second, "the third check", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Errorf("checks = %d, want 3", got)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s for three checks 10 ms apart", took)
	}
}

// recorder is a testing.TB that records Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func TestEventuallyFailsPastTheTimeout(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		Eventually(r, 30*time.Millisecond, "a condition that never holds", func() bool { return false })
	}()
	if r.failed == "" {
		t.Fatal("Eventually returned although the condition never held")
	}
}
