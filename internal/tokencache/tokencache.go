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
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// memoryTTL is the longest an entry stays in memory, however long its token
// lives: past it the token is verified again, which costs one signature
// check per live token every memoryTTL.
const memoryTTL = 10 * time.Minute

// Cache holds verified tokens' claims, keyed by a digest of the token (so
// no bearer secret is kept as a key), in a least-recently-used cache whose
// entries also leave memory memoryTTL after they were added. The LRU runs
// one cleanup goroutine for the life of the process, so a process makes one
// Cache per verifier, not one per request.
type Cache[C any] struct {
	lru *expirable.LRU[[32]byte, entry[C]]
}

type entry[C any] struct {
	claims  C
	kid     string
	key     crypto.PublicKey
	expires time.Time
}

// New returns a cache of at most max tokens; when it is full the least
// recently used token is forgotten.
func New[C any](max int) *Cache[C] {
	return &Cache[C]{lru: expirable.NewLRU[[32]byte, entry[C]](max, nil, memoryTTL)}
}

// Get returns the claims of token when it verified before, is unexpired
// at now, and lookup still returns the same key for its kid.
func (c *Cache[C]) Get(token string, now time.Time, lookup func(kid string) (crypto.PublicKey, bool)) (C, bool) {
	var zero C
	e, ok := c.lru.Get(digest(token))
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
	c.lru.Add(digest(token), entry[C]{claims: claims, kid: kid, key: key, expires: expires})
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
