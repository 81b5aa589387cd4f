package identity

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestHasherBoundsConcurrency: with every slot taken, a hash waits for
// one instead of running (and gives up with its context).
func TestHasherBoundsConcurrency(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 1)
	h.slots <- struct{}{} // the one slot is busy
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "password"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash with every slot busy = %v, want it to wait until its deadline", err)
	}
	if _, _, err := h.Verify(ctx, "password", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Verify with every slot busy = %v, want it to wait until its deadline", err)
	}
	<-h.slots
	if _, err := h.Hash(context.Background(), "password"); err != nil {
		t.Fatalf("Hash with a free slot: %v", err)
	}
}

// TestHasherDefaultLeavesHalfTheCores: unconfigured, sign-ins may take
// half the cores (at least one), never all of them on a multi-core host.
func TestHasherDefaultLeavesHalfTheCores(t *testing.T) {
	want := max(1, runtime.GOMAXPROCS(0)/2)
	for _, n := range []int{0, -1} {
		if got := cap(NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, n).slots); got != want {
			t.Errorf("NewHasher(…, %d) runs %d hashes at once, want %d (half of GOMAXPROCS %d)", n, got, want, runtime.GOMAXPROCS(0))
		}
	}
	if got := cap(NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 3).slots); got != 3 {
		t.Errorf("NewHasher(…, 3) runs %d hashes at once, want 3", got)
	}
}

// TestHasherReleasesMemoryWhenIdle: the last hash of a burst arms the
// release of argon2's memory.
func TestHasherReleasesMemoryWhenIdle(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 4)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := h.Hash(context.Background(), "password"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.busy != 0 {
		t.Errorf("busy = %d after the burst, want 0", h.busy)
	}
	if h.idle == nil {
		t.Error("no release armed after the burst")
	}
}
