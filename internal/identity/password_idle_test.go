package identity

import (
	"context"
	"sync"
	"testing"
)

// TestHasherReleasesMemoryWhenIdle: the last hash of a burst arms the
// release of argon2's memory; a hash that starts meanwhile disarms it.
func TestHasherReleasesMemoryWhenIdle(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 4)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.Hash(context.Background(), "password"); err != nil {
				t.Error(err)
			}
		}()
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
