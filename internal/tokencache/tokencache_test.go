package tokencache

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func newKey(t *testing.T) ed25519.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestCache(t *testing.T) {
	now := time.Now()
	k1, k2 := newKey(t), newKey(t)
	published := map[string]crypto.PublicKey{"k1": k1}
	lookup := func(kid string) (crypto.PublicKey, bool) { k, ok := published[kid]; return k, ok }

	c := New[string](10)
	if _, ok := c.Get("tok", now, lookup); ok {
		t.Fatal("hit on an empty cache")
	}
	c.Put("tok", "claims", "k1", k1, now.Add(time.Minute))
	if got, ok := c.Get("tok", now, lookup); !ok || got != "claims" {
		t.Errorf("Get = %q, %v; want claims, true", got, ok)
	}
	if _, ok := c.Get("tok2", now, lookup); ok {
		t.Error("hit for another token")
	}
	if _, ok := c.Get("tok", now.Add(time.Minute), lookup); ok {
		t.Error("hit for an expired token")
	}
	published["k1"] = k2 // the kid now names another key
	if _, ok := c.Get("tok", now, lookup); ok {
		t.Error("hit after the kid's key changed")
	}
	delete(published, "k1") // withdrawn
	if _, ok := c.Get("tok", now, lookup); ok {
		t.Error("hit after the key was withdrawn")
	}
}

func TestCacheIsBounded(t *testing.T) {
	k := newKey(t)
	c := New[int](100)
	for i := 0; i < 1000; i++ {
		c.Put(fmt.Sprint("tok", i), i, "k", k, time.Now().Add(time.Hour))
	}
	if n := c.lru.Len(); n != 100 {
		t.Errorf("cache holds %d entries, want the bound, 100", n)
	}
	lookup := func(string) (crypto.PublicKey, bool) { return k, true }
	if _, ok := c.Get("tok999", time.Now(), lookup); !ok {
		t.Error("the most recent token was evicted")
	}
	if _, ok := c.Get("tok0", time.Now(), lookup); ok {
		t.Error("the least recently used token is still held")
	}
}

func TestCacheConcurrent(t *testing.T) {
	k := newKey(t)
	lookup := func(string) (crypto.PublicKey, bool) { return k, true }
	c := New[int](64)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				tok := fmt.Sprint("tok", i%80)
				c.Put(tok, i, "k", k, time.Now().Add(time.Hour))
				c.Get(tok, time.Now(), lookup)
			}
		}()
	}
	wg.Wait()
	c.Put("last", 42, "k", k, time.Now().Add(time.Hour))
	if got, ok := c.Get("last", time.Now(), lookup); !ok || got != 42 {
		t.Errorf("after concurrent use: Get = %d, %v; want 42, true", got, ok)
	}
}

// TestGetDoesNotAllocate: a hit is on every authenticated request's path.
func TestGetDoesNotAllocate(t *testing.T) {
	var k crypto.PublicKey = newKey(t) // as the key set holds it
	lookup := func(string) (crypto.PublicKey, bool) { return k, true }
	c := New[int](8)
	tok := strings.Repeat("t", 600) // a token is several hundred bytes
	c.Put(tok, 1, "k", k, time.Now().Add(time.Hour))
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() { c.Get(tok, now, lookup) }); n != 0 {
		t.Errorf("Get allocates %.0f times per call", n)
	}
}

func TestDigestOfAnyLength(t *testing.T) {
	for _, n := range []int{0, 32, 1023, 1024, 1025, 8000} {
		tok := strings.Repeat("x", n)
		if digest(tok) != sha256.Sum256([]byte(tok)) {
			t.Errorf("digest of %d bytes differs from SHA-256", n)
		}
	}
}
