package darkroom

import (
	"bytes"
	"fmt"
	"testing"
)

// TestVariantCacheBounds: an entry over the entry bound is not kept, the
// total never passes the bound, and the least recently used goes first.
func TestVariantCacheBounds(t *testing.T) {
	key := func(i int) cacheKey { return cacheKey{media: fmt.Sprint(i), preset: "card", format: "webp", sha: "s"} }
	for _, tc := range []struct {
		name       string
		max, entry int64
		puts       []int // sizes, keyed by index
		touch      []int // got after the puts before theirs, by index: -1 for none
		want       []int // indexes kept
		wantBytes  int64
	}{
		{name: "within bounds", max: 100, entry: 50, puts: []int{10, 20, 30}, want: []int{0, 1, 2}, wantBytes: 60},
		{name: "over the entry bound", max: 100, entry: 50, puts: []int{10, 51, 50}, want: []int{0, 2}, wantBytes: 60},
		{name: "oldest evicted", max: 100, entry: 50, puts: []int{40, 40, 40}, want: []int{1, 2}, wantBytes: 80},
		{name: "several evicted for one", max: 100, entry: 100, puts: []int{30, 30, 30, 90}, want: []int{3}, wantBytes: 90},
		{name: "a read keeps it", max: 100, entry: 50, puts: []int{40, 40, 40}, touch: []int{-1, -1, 0}, want: []int{0, 2}, wantBytes: 80},
		{name: "entry bound above the total", max: 20, entry: 50, puts: []int{10, 30, 20}, want: []int{2}, wantBytes: 20},
		{name: "none kept", max: 0, entry: 50, puts: []int{10}, want: nil, wantBytes: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newVariantCache(tc.max, tc.entry)
			for i, n := range tc.puts {
				if i < len(tc.touch) && tc.touch[i] >= 0 {
					if _, ok := c.get(key(tc.touch[i])); !ok {
						t.Fatalf("entry %d missing before put %d", tc.touch[i], i)
					}
				}
				c.put(key(i), bytes.Repeat([]byte{byte(i)}, n))
				if _, used := c.size(); used > tc.max {
					t.Fatalf("after put %d: %d bytes kept, bound %d", i, used, tc.max)
				}
			}
			kept := map[int]bool{}
			for _, i := range tc.want {
				kept[i] = true
			}
			for i, n := range tc.puts {
				data, ok := c.get(key(i))
				if ok != kept[i] {
					t.Errorf("entry %d kept = %v, want %v", i, ok, kept[i])
				}
				if ok && !bytes.Equal(data, bytes.Repeat([]byte{byte(i)}, n)) {
					t.Errorf("entry %d: other bytes", i)
				}
			}
			if n, used := c.size(); n != len(tc.want) || used != tc.wantBytes {
				t.Errorf("size %d entries, %d bytes; want %d, %d", n, used, len(tc.want), tc.wantBytes)
			}
		})
	}
}

// TestVariantCacheKeyedBySHA: bytes kept for one row's SHA-256 are not
// served for another row of the same variant.
func TestVariantCacheKeyedBySHA(t *testing.T) {
	c := newVariantCache(100, 50)
	c.put(cacheKey{media: "m", preset: "card", format: "webp", sha: "a"}, []byte("old"))
	if _, ok := c.get(cacheKey{media: "m", preset: "card", format: "webp", sha: "b"}); ok {
		t.Fatal("bytes of another SHA-256 were served")
	}
	if data, ok := c.get(cacheKey{media: "m", preset: "card", format: "webp", sha: "a"}); !ok || string(data) != "old" {
		t.Fatalf("got %q, %v", data, ok)
	}
}
