package identity

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
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

// TestHasherYieldsToOtherRequests: while a request that does no hashing
// is in flight, and for a moment after, hashing keeps to half the slots;
// then the others are open again.
func TestHasherYieldsToOtherRequests(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 4)
	h.shared <- struct{}{} // the shared half (two slots) is busy
	h.shared <- struct{}{}
	done := h.Serving()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "password"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash while another request is served and the shared half is busy = %v, want a wait", err)
	}
	if n := len(h.slots); n != 0 {
		t.Fatalf("a hash that gave up still holds %d slot(s)", n)
	}
	done()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := h.Hash(ctx2, "password"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Hash just after another request ended = %v, want a wait", err)
	}
	h.lastServed.Store(time.Now().Add(-servedRecently).UnixNano())
	if _, err := h.Hash(context.Background(), "password"); err != nil {
		t.Fatalf("Hash with no other request in flight or recent: %v", err)
	}
}

func TestHasherWhileServing(t *testing.T) {
	for _, tt := range []struct{ slots, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {8, 4}} {
		if got := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, tt.slots).WhileServing(); got != tt.want {
			t.Errorf("NewHasher(…, %d).WhileServing() = %d, want %d", tt.slots, got, tt.want)
		}
	}
}

// TestHasherOnContention: the hook hears each change between hashing
// alone and hashing beside other requests, once, as the hash starts, and
// that hashing is no longer contended once it has been quiet.
func TestHasherOnContention(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 4)
	var heard []bool
	h.OnContention(func(c bool) { heard = append(heard, c) })
	hash := func() {
		t.Helper()
		if _, err := h.Hash(context.Background(), "password"); err != nil {
			t.Fatal(err)
		}
	}
	hash() // alone, as the Hasher started: nothing changes
	done := h.Serving()
	hash()
	hash()
	done()
	hash() // the other request ended a moment ago: still contended
	h.lastServed.Store(time.Now().Add(-servedRecently).UnixNano())
	hash()
	hash()
	done = h.Serving()
	hash()
	done()
	h.rest() // hashing quiet for ReleaseAfter
	h.rest()
	done = h.Serving()
	hash()
	done()
	h.mu.Lock()
	h.busy++ // a hash started as the quiet ended
	h.mu.Unlock()
	h.rest()
	if want := []bool{true, false, true, false, true}; !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}

// TestHasherOnContentionRace: hashes starting on many goroutines while
// other requests come and go; the calls never overlap, each is a change,
// and the last names the state the Hasher ends in.
func TestHasherOnContentionRace(t *testing.T) {
	h := NewHasher(HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}, 4)
	var (
		heard  []bool
		inside atomic.Int32
	)
	h.OnContention(func(c bool) {
		if inside.Add(1) != 1 {
			t.Error("OnContention calls overlap")
		}
		heard = append(heard, c)
		inside.Add(-1)
	})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 20 {
				if (i+j)%3 == 0 {
					done := h.Serving()
					done()
				} else if (i+j)%3 == 1 {
					h.lastServed.Store(0)
				}
				if _, err := h.Hash(context.Background(), "password"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	last := false
	for i, c := range heard {
		if c == last {
			t.Fatalf("call %d repeats %v: %v", i, c, heard)
		}
		last = c
	}
	if last != h.wasContended {
		t.Fatalf("last heard %v, Hasher ends with contended = %v", last, h.wasContended)
	}
	if len(heard) == 0 {
		t.Fatal("no change heard: the race exercised nothing")
	}
}

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
