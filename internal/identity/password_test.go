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

// TestHasherDefaultUsesEveryCore: unconfigured, one hash runs per core
// (GOMAXPROCS), and argon2's memory is bounded by that many hashes; a
// configured bound is kept as given.
func TestHasherDefaultUsesEveryCore(t *testing.T) {
	p := HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}
	for _, tc := range []struct {
		name        string
		concurrency int
		want        int
	}{
		{"Zero", 0, runtime.GOMAXPROCS(0)},
		{"Negative", -1, runtime.GOMAXPROCS(0)},
		{"Configured", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHasher(p, tc.concurrency)
			if got := cap(h.slots) + cap(h.spare); got != tc.want {
				t.Errorf("NewHasher(…, %d) runs %d hashes at once, want %d (GOMAXPROCS %d)", tc.concurrency, got, tc.want, runtime.GOMAXPROCS(0))
			}
			if got, want := h.MemoryBound(), uint64(tc.want)*64*1024; got != want {
				t.Errorf("MemoryBound = %d bytes, want %d (%d hashes × 64 KiB)", got, want, tc.want)
			}
		})
	}
}

// TestHasherHashesOnEveryCoreAtOnce: with the default bound, GOMAXPROCS
// hashes run at the same time, and one more waits for a slot.
func TestHasherHashesOnEveryCoreAtOnce(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 0)
	n := runtime.GOMAXPROCS(0)
	releases := make([]func(), 0, n)
	for i := range n {
		release, err := h.acquire(context.Background())
		if err != nil {
			t.Fatalf("hash %d of %d: %v", i+1, n, err)
		}
		releases = append(releases, release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hash %d with %d running = %v, want it to wait", n+1, n, err)
	}
	for _, release := range releases {
		release()
	}
}

// TestHasherHalvesWhileContended: while other work is in flight (a
// session check, as Service reports it) a hash takes only the shared half
// of the bound, at least one; with none in flight, every slot.
func TestHasherHalvesWhileContended(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		bound, quiet, contended int
	}{
		{"One", 1, 1, 1},
		{"Two", 2, 2, 1},
		{"Four", 4, 4, 2},
		{"Five", 5, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, busy := range []bool{false, true} {
				h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, tc.bound)
				h.contended = func() bool { return busy }
				want := tc.quiet
				if busy {
					want = tc.contended
				}
				var releases []func()
				for i := range want {
					release, err := h.acquire(context.Background())
					if err != nil {
						t.Fatalf("contended %v: hash %d of %d: %v", busy, i+1, want, err)
					}
					releases = append(releases, release)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				if _, err := h.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("contended %v: hash %d ran with %d running, want it to wait", busy, want+1, want)
				}
				cancel()
				for _, release := range releases {
					release()
				}
				if got := len(h.slots) + len(h.spare); got != 0 {
					t.Errorf("contended %v: %d slots still held after every release", busy, got)
				}
			}
		})
	}
}

// TestServiceContendedWhileCheckingSessions: the service tells its hasher
// it is contended exactly while a session check is in flight.
func TestServiceContendedWhileCheckingSessions(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 2)
	s := NewService(nil, h, nil, Options{})
	if h.contended() {
		t.Fatal("contended with no session check in flight")
	}
	s.checking.Add(1)
	if !h.contended() {
		t.Error("not contended while a session check is in flight")
	}
	s.checking.Add(-1)
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
