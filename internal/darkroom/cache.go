package darkroom

import (
	"bytes"
	"container/list"
	"sync"
)

// Defaults of the stored-variant cache (decision 0030).
const (
	// DefaultVariantCacheBytes bounds the bytes of variants kept in
	// memory (DARKROOM_VARIANT_CACHE_BYTES).
	DefaultVariantCacheBytes = 32 << 20
	// DefaultVariantCacheEntryBytes is the largest variant kept; larger
	// ones are always read from the object store.
	DefaultVariantCacheEntryBytes = 256 << 10
)

// cacheKey names one variant's bytes: the row's SHA-256 is part of the
// key, so bytes are served only for the row just read.
type cacheKey struct {
	media, preset, format, sha string
}

type cacheEntry struct {
	key  cacheKey
	data []byte
}

// variantCache keeps stored variants' bytes, least recently used
// evicted first, at most max bytes in all and entry bytes each. It is
// consulted only after the variant's row was read, so it never answers
// for a deleted media or variant.
type variantCache struct {
	max, entry int64

	mu    sync.Mutex
	used  int64
	order *list.List // front: most recently used
	items map[cacheKey]*list.Element
}

// newVariantCache returns a cache of max bytes; nil (keeping nothing)
// when max or entry is not positive.
func newVariantCache(max, entry int64) *variantCache {
	if max <= 0 || entry <= 0 {
		return nil
	}
	return &variantCache{max: max, entry: min(entry, max), order: list.New(), items: map[cacheKey]*list.Element{}}
}

// get returns k's bytes; callers must not modify them.
func (c *variantCache) get(k cacheKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).data, true
}

// put keeps data under k when it is within the entry bound, evicting the
// least recently used until the total is within max. data must not be
// modified afterwards.
func (c *variantCache) put(k cacheKey, data []byte) {
	if c == nil || int64(len(data)) > c.entry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		return
	}
	for c.used+int64(len(data)) > c.max {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.items, e.key)
		c.used -= int64(len(e.data))
	}
	c.items[k] = c.order.PushFront(&cacheEntry{key: k, data: data})
	c.used += int64(len(data))
}

// size returns the entries kept and their bytes.
func (c *variantCache) size() (int, int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.used
}

// memObject is a cached variant opened for reading: seeking and ranges
// work as on the store's object.
type memObject struct{ *bytes.Reader }

func (memObject) Close() error { return nil }
