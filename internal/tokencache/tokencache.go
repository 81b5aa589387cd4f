// Package tokencache remembers bearer tokens whose signature verified, so a
// client presenting the same token again costs a hash and a map lookup
// instead of a signature verification (the largest CPU cost of an
// authenticated request). It caches only the signature's verdict: a hit is
// honoured only while the token is unexpired and the very key that verified
// it is still published, so a withdrawn or replaced key ends every entry it
// vouched for. Anything else a service checks per request (identity's
// session row) is still checked.
package tokencache

import (
	"crypto"
	"crypto/sha256"
	"sync"
	"time"
)

// Cache holds verified tokens' claims, keyed by a digest of the token (so
// no bearer secret is kept as a key).
type Cache[C any] struct {
	mu      sync.Mutex
	entries map[[32]byte]entry[C]
	max     int
}

type entry[C any] struct {
	claims  C
	kid     string
	key     crypto.PublicKey
	expires time.Time
}

// New returns a cache of at most max tokens. When it is full it starts
// over: a bound on memory that costs one verification per live token.
func New[C any](max int) *Cache[C] {
	return &Cache[C]{entries: make(map[[32]byte]entry[C]), max: max}
}

// Get returns the claims of token when it verified before, is unexpired
// at now, and lookup still returns the same key for its kid.
func (c *Cache[C]) Get(token string, now time.Time, lookup func(kid string) (crypto.PublicKey, bool)) (C, bool) {
	var zero C
	sum := digest(token)
	c.mu.Lock()
	e, ok := c.entries[sum]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		return zero, false
	}
	current, ok := lookup(e.kid)
	if !ok || !sameKey(current, e.key) {
		return zero, false
	}
	return e.claims, true
}

// Put remembers that token verified with key (published as kid) and is
// good until expires.
func (c *Cache[C]) Put(token string, claims C, kid string, key crypto.PublicKey, expires time.Time) {
	sum := digest(token)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		c.entries = make(map[[32]byte]entry[C], c.max/4)
	}
	c.entries[sum] = entry[C]{claims: claims, kid: kid, key: key, expires: expires}
}

// sameKey compares public keys by value (ed25519, ecdsa and rsa keys all
// implement Equal).
func sameKey(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// digest hashes token through a stack buffer: converting a string longer
// than 32 bytes to a []byte allocates, and every authenticated request
// would pay that for its token (a longer token than the buffer still
// hashes, on the heap).
func digest(token string) [32]byte {
	var buf [1024]byte
	return sha256.Sum256(append(buf[:0], token...))
}
