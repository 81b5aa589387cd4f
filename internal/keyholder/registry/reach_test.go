package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/platformco/platform/internal/keyholder/embedregistry"
	"github.com/platformco/platform/internal/semver"
)

// reachRig is a real Distribution registry, a counter of the tag lists
// asked of it, and a reach cache on a clock the test moves.
type reachRig struct {
	t     *testing.T
	host  string
	lists atomic.Int64
	cache *reachCache

	mu  sync.Mutex
	now time.Time
}

func newReachRig(t *testing.T) *reachRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := embedregistry.Start(context.Background(), ln, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	r := &reachRig{t: t, host: strings.TrimPrefix(reg.URL, "http://"), now: time.Now()}
	target, _ := url.Parse(reg.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tags/list") {
			r.lists.Add(1)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(counted.Close)
	up := NewUpstream(counted.URL, "", "")
	t.Cleanup(up.Close)
	r.cache = newReachCache(up)
	r.cache.now = r.clock
	return r
}

func (r *reachRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *reachRig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

// push writes a random image as repo:tag and returns its manifest's and
// its layer's digests.
func (r *reachRig) push(repo, tag string) (manifest, layer string) {
	r.t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(repo, tag, img)
	d, _ := img.Digest()
	ls, _ := img.Layers()
	l, _ := ls[0].Digest()
	return d.String(), l.String()
}

func (r *reachRig) write(repo, tag string, img v1.Image) {
	r.t.Helper()
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", r.host, repo, tag), name.Insecure)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		r.t.Fatalf("push %s:%s: %v", repo, tag, err)
	}
}

func (r *reachRig) reachable(rangeText, target string, blob bool) bool {
	r.t.Helper()
	rng, err := semver.ParseRange(rangeText)
	if err != nil {
		r.t.Fatal(err)
	}
	ok, err := r.cache.reachable(context.Background(), "platform", rng, target, blob)
	if err != nil {
		r.t.Fatalf("reachable: %v", err)
	}
	return ok
}

// TestReachCacheNeverWidens: the cached sets admit only what the
// upstream's in-range tags referenced at most reachTTL ago, whatever
// happens to the tags in between.
func TestReachCacheNeverWidens(t *testing.T) {
	t.Run("ErrDigestLeavesTag", func(t *testing.T) {
		r := newReachRig(t)
		oldManifest, oldLayer := r.push("platform", "1.0.0")
		if !r.reachable("^1.0.0", oldLayer, true) || !r.reachable("^1.0.0", oldManifest, false) {
			t.Fatal("the tag's own manifest and layer are refused")
		}
		// The tag moves to another image: what only the old one
		// referenced is refused once the bound has passed.
		newManifest, newLayer := r.push("platform", "1.0.0")
		r.advance(reachTTL)
		for _, tc := range []struct {
			digest string
			blob   bool
			want   bool
		}{{oldLayer, true, false}, {oldManifest, false, false}, {newLayer, true, true}, {newManifest, false, true}} {
			if got := r.reachable("^1.0.0", tc.digest, tc.blob); got != tc.want {
				t.Errorf("%s (blob %v): got %v, want %v", tc.digest, tc.blob, got, tc.want)
			}
		}
	})
	t.Run("ErrTagOutsideRange", func(t *testing.T) {
		r := newReachRig(t)
		_, inLayer := r.push("platform", "1.2.0")
		outManifest, outLayer := r.push("platform", "2.0.0")
		_, latestLayer := r.push("platform", "latest")
		_, rcLayer := r.push("platform", "1.3.0-rc1")
		for round := range 3 {
			for _, tc := range []struct {
				rng, digest string
				blob, want  bool
			}{
				{"^1.0.0", inLayer, true, true},
				{"^1.0.0", outLayer, true, false},
				{"^1.0.0", outManifest, false, false},
				{"^1.0.0", latestLayer, true, false},
				{"^1.0.0", rcLayer, true, false},
				// Another range on the same repository has its own set.
				{"^2.0.0", outLayer, true, true},
				{"^2.0.0", inLayer, true, false},
				{"^1.0.0", outLayer, true, false},
			} {
				if got := r.reachable(tc.rng, tc.digest, tc.blob); got != tc.want {
					t.Errorf("round %d, %s %s: got %v, want %v", round, tc.rng, tc.digest, got, tc.want)
				}
			}
			// Fresh resolutions (a miss past reachRefresh, an expired
			// set) change nothing.
			r.advance(reachRefresh * time.Duration(1+4*round))
		}
	})
	t.Run("OKPublishedSinceAfterRefresh", func(t *testing.T) {
		r := newReachRig(t)
		r.push("platform", "1.0.0")
		_, before := r.push("platform", "1.0.1")
		if !r.reachable("^1.0.0", before, true) {
			t.Fatal("refused a layer of an in-range tag")
		}
		_, later := r.push("platform", "1.1.0")
		if r.reachable("^1.0.0", later, true) {
			t.Error("a miss within reachRefresh of the resolution resolved again")
		}
		r.advance(reachRefresh)
		if !r.reachable("^1.0.0", later, true) {
			t.Error("a layer published since the resolution is refused past reachRefresh")
		}
	})
	t.Run("OKOneResolutionServesMany", func(t *testing.T) {
		r := newReachRig(t)
		_, layer := r.push("platform", "1.0.0")
		rng, _ := semver.ParseRange("^1.0.0")
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ok, err := r.cache.reachable(context.Background(), "platform", rng, layer, true); !ok || err != nil {
					t.Errorf("refused an in-range layer: %v", err)
				}
			}()
		}
		wg.Wait()
		for range 20 {
			r.reachable("^1.0.0", layer, true)
		}
		if n := r.lists.Load(); n != 1 {
			t.Errorf("tag lists asked of the upstream: got %d, want 1", n)
		}
	})
	t.Run("ErrNothingOnAnEmptyRepository", func(t *testing.T) {
		r := newReachRig(t)
		if r.reachable("^1.0.0", "sha256:"+strings.Repeat("a", 64), true) {
			t.Error("a digest of a repository that does not exist is reachable")
		}
	})
}
