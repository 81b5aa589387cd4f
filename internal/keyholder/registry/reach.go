package registry

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/semver"
)

// A digest is served when it hangs off an in-range tag. Finding that out
// takes the tag list, a HEAD per in-range tag and the manifests below
// them; a pull asks it for every blob and every manifest by digest. The
// reach cache keeps, per repository and version range, the set of
// digests reachable from the range's tags, resolved once and shared by
// every credential with that range, for a bounded time:
//
//   - reachTTL bounds staleness: a set is never used past it, so a digest
//     an in-range tag stops referencing (the tag moved, or went) is
//     refused at most reachTTL after the change. A set is only ever what
//     the upstream's in-range tags referenced at one moment, so the cache
//     never admits a digest a fresh resolution would not have admitted
//     then: a tag outside the range, or another range's, never widens it.
//   - reachRefresh lets what was just published be read at once: a digest
//     missing from a set older than reachRefresh resolves the set again,
//     so probes for digests that are nowhere cost the upstream at most one
//     resolution per reachRefresh and set.
//   - maxReachDigests bounds the memory: past it the cache starts over.
const (
	reachTTL        = 5 * time.Second
	reachRefresh    = time.Second
	maxReachDigests = 1 << 17
	// resolveParallel is how many in-range tags are resolved at once.
	resolveParallel = 8
	// resolveTimeout bounds one resolution, which outlives the request
	// that started it (others may be waiting for it).
	resolveTimeout = 30 * time.Second
)

// reachKind says how a digest is reachable: as a manifest, a blob, or
// both.
type reachKind uint8

const (
	reachManifest reachKind = 1 << iota
	reachBlob
)

// reachSet is what one range's tags of one repository reached at one
// moment. Keys are the 32 bytes of sha256 digests (the only form the
// front accepts).
type reachSet struct {
	at      time.Time
	digests map[[32]byte]reachKind
	// tags are the manifests the range's tags name themselves, each with
	// the newest in-range tag naming it: fetching one by digest is a pull
	// of that tag (a client resolves the tag with HEAD, then fetches).
	tags map[[32]byte]string
}

// tagOf is the in-range tag whose own manifest is dgst; "" when it is
// none's (a child of an index, or unknown).
func (s *reachSet) tagOf(dgst string) string {
	key, ok := digestKey(dgst)
	if !ok {
		return ""
	}
	return s.tags[key]
}

func (s *reachSet) add(dgst string, k reachKind) {
	if key, ok := digestKey(dgst); ok {
		s.digests[key] |= k
	}
}

func (s *reachSet) has(dgst string, k reachKind) bool {
	key, ok := digestKey(dgst)
	return ok && s.digests[key]&k != 0
}

func digestKey(dgst string) ([32]byte, bool) {
	var key [32]byte
	hexPart, ok := strings.CutPrefix(dgst, "sha256:")
	if !ok || len(hexPart) != 64 {
		return key, false
	}
	if _, err := hex.Decode(key[:], []byte(hexPart)); err != nil {
		return key, false
	}
	return key, true
}

// reachEntry is one key's set, or the resolution under way.
type reachEntry struct {
	ready chan struct{} // closed when set or err is filled
	set   *reachSet
	err   error
}

// reachCache holds the sets by repository and range.
type reachCache struct {
	upstream *Upstream
	now      func() time.Time
	ttl      time.Duration
	refresh  time.Duration

	mu      sync.Mutex
	entries map[string]*reachEntry
	digests int // held by the completed sets
}

func newReachCache(u *Upstream) *reachCache {
	return &reachCache{upstream: u, now: time.Now, ttl: reachTTL, refresh: reachRefresh, entries: map[string]*reachEntry{}}
}

// reachable reports whether target (a manifest, or a blob when wantBlob)
// hangs off one of repo's tags inside rng.
func (c *reachCache) reachable(ctx context.Context, repo string, rng semver.Range, target string, wantBlob bool) (bool, error) {
	_, ok, err := c.find(ctx, repo, rng, target, wantBlob)
	return ok, err
}

// find is reachable with the set that answered.
func (c *reachCache) find(ctx context.Context, repo string, rng semver.Range, target string, wantBlob bool) (*reachSet, bool, error) {
	kind := reachManifest
	if wantBlob {
		kind = reachBlob
	}
	key := repo + "\x00" + rng.String()
	set, err := c.get(ctx, key, repo, rng, time.Time{})
	if err != nil {
		return nil, false, err
	}
	if set.has(target, kind) {
		return set, true, nil
	}
	if c.now().Sub(set.at) < c.refresh {
		return set, false, nil
	}
	// Maybe published since: resolve again, once for every caller.
	if set, err = c.get(ctx, key, repo, rng, set.at); err != nil {
		return nil, false, err
	}
	return set, set.has(target, kind), nil
}

// get returns key's set when it is younger than the TTL and newer than
// stale (the zero time: any), else resolves it; concurrent callers share
// one resolution.
func (c *reachCache) get(ctx context.Context, key, repo string, rng semver.Range, stale time.Time) (*reachSet, error) {
	c.mu.Lock()
	if e := c.entries[key]; e != nil {
		select {
		case <-e.ready:
			if e.err == nil && c.now().Sub(e.set.at) < c.ttl && e.set.at.After(stale) {
				c.mu.Unlock()
				return e.set, nil
			}
			c.drop(key, e)
		default:
			// A resolution under way started after any set this caller
			// has seen: wait for it.
			c.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return e.set, e.err
		}
	}
	e := &reachEntry{ready: make(chan struct{})}
	c.entries[key] = e
	c.mu.Unlock()

	// The resolution belongs to every caller waiting for it, not to the
	// request that started it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	e.set, e.err = c.resolve(rctx, repo, rng)
	cancel()

	c.mu.Lock()
	if e.err != nil {
		// A failure is not kept: the next caller asks again.
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	} else {
		if c.digests+len(e.set.digests) > maxReachDigests {
			c.clearCompleted()
		}
		c.digests += len(e.set.digests)
	}
	close(e.ready)
	c.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	return e.set, nil
}

// drop removes key's completed entry e (c.mu held).
func (c *reachCache) drop(key string, e *reachEntry) {
	if e.set != nil {
		c.digests -= len(e.set.digests)
	}
	delete(c.entries, key)
}

// clearCompleted drops every completed set (c.mu held); resolutions under
// way stay, and count once they complete.
func (c *reachCache) clearCompleted() {
	for key, e := range c.entries {
		select {
		case <-e.ready:
			c.drop(key, e)
		default:
		}
	}
}

// resolve lists repo's tags inside rng and collects every digest their
// manifests reach, and their referrers'. A tag or a child manifest the upstream no longer has
// is skipped (an index may name platforms that were never pushed); any
// other failure fails the resolution.
func (c *reachCache) resolve(ctx context.Context, repo string, rng semver.Range) (*reachSet, error) {
	at := c.now()
	tags, err := inRange(ctx, c.upstream, repo, rng)
	if errors.Is(err, errNotFound) {
		return &reachSet{at: at, digests: map[[32]byte]reachKind{}, tags: map[[32]byte]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	trees := make([]*reachSet, len(tags))
	roots := make([]string, len(tags))
	errs := make([]error, len(tags))
	sem := make(chan struct{}, resolveParallel)
	var wg sync.WaitGroup
	for i, tag := range tags {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			root, err := c.upstream.TagDigest(ctx, repo, tag)
			if errors.Is(err, errNotFound) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			t := &reachSet{digests: map[[32]byte]reachKind{}}
			if errs[i] = c.upstream.walk(ctx, repo, root, t, 0); errs[i] == nil {
				errs[i] = c.upstream.walkReferrers(ctx, repo, t)
			}
			trees[i], roots[i] = t, root
		}()
	}
	wg.Wait()
	set := &reachSet{at: at, digests: map[[32]byte]reachKind{}, tags: map[[32]byte]string{}}
	for i, tag := range tags { // newest first
		if errs[i] != nil {
			return nil, errs[i]
		}
		if trees[i] != nil {
			for k, v := range trees[i].digests {
				set.digests[k] |= v
			}
			if key, ok := digestKey(roots[i]); ok && set.tags[key] == "" {
				set.tags[key] = tag
			}
		}
	}
	return set, nil
}

// walk adds the manifest dgst of repo and everything below it to set.
// Indexes nest at most a few levels; depth bounds a malicious cycle.
func (u *Upstream) walk(ctx context.Context, repo, dgst string, set *reachSet, depth int) error {
	if depth > 4 {
		return nil
	}
	n, err := u.resolve(ctx, repo, dgst)
	if errors.Is(err, errNotFound) {
		// A child an index names but that was never pushed, or a tag
		// that went between its HEAD and this fetch.
		return nil
	}
	if err != nil {
		return err
	}
	set.add(dgst, reachManifest)
	for _, b := range n.blobs {
		set.add(b, reachBlob)
	}
	for _, m := range n.manifests {
		if err := u.walk(ctx, repo, m, set, depth+1); err != nil {
			return err
		}
	}
	return nil
}
