package tokens

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options left zero.
const (
	DefaultFetchTimeout = 2 * time.Second
	DefaultCooldown     = 10 * time.Second
	maxBodyBytes        = 1 << 20
	minRetry            = 250 * time.Millisecond
	maxRetry            = 15 * time.Second
)

// Options configures a Cache.
type Options struct {
	// URL is the key set's address: IDENTITY_ISSUER + /.well-known/jwks.json.
	URL string
	// TTL is how long a fetched key set may be used (IDENTITY_JWKS_TTL_MS).
	// It is also the revocation window for a withdrawn key.
	TTL time.Duration
	// FetchTimeout bounds one fetch (default 2 s): a slower key set is an
	// outage.
	FetchTimeout time.Duration
	// Cooldown is the least time between two early refreshes triggered by
	// tokens naming an unknown kid (default 10 s), so forged kids cannot
	// turn a service into a load generator against identity.
	Cooldown time.Duration
	// Client fetches the key set; nil means a dedicated client.
	Client *http.Client
	Logger *slog.Logger
}

// snapshot is an immutable loaded key set: readers take it with one atomic
// load and never lock.
type snapshot struct {
	keys      map[string]Key
	fetchedAt time.Time
	expiresAt time.Time
}

// Cache holds the verification keys. Run must be running for it to load and
// refresh; Lookup and Status are safe for concurrent use and never fetch.
type Cache struct {
	opts   Options
	client *http.Client
	log    *slog.Logger

	snap        atomic.Pointer[snapshot]
	nextAttempt atomic.Int64 // unix nanoseconds of the next scheduled fetch
	fetches     atomic.Int64

	kick chan struct{}

	mu        sync.Mutex
	waiters   []chan struct{} // closed when the fetch that serves them ends
	early     chan struct{}   // the pending early refresh, nil when none
	lastEarly time.Time
}

// New returns a Cache for opts. It fetches nothing until Run starts.
func New(opts Options) *Cache {
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = DefaultCooldown
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: opts.FetchTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          2,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   opts.FetchTimeout,
			ResponseHeaderTimeout: opts.FetchTimeout,
			ForceAttemptHTTP2:     true,
		}}
	}
	c := &Cache{opts: opts, client: client, log: opts.Logger, kick: make(chan struct{}, 1)}
	c.nextAttempt.Store(time.Now().UnixNano())
	return c
}

// Status is the cache's state as a verifying service needs it.
type Status struct {
	// Usable is true when a key set is loaded and has not expired. When it
	// is false every protected request is answered 503: the key set was
	// never loaded, or it expired and its refreshes failed.
	Usable bool
	// Loaded is true once any key set was fetched successfully.
	Loaded bool
	// ExpiresAt is when the current key set stops being usable.
	ExpiresAt time.Time
	// RetryAfter is how long until the next fetch attempt, at least 1 s.
	RetryAfter time.Duration
}

// Status reports the cache's state at now.
func (c *Cache) Status(now time.Time) Status {
	s := c.snap.Load()
	st := Status{}
	if s != nil {
		st.Loaded = true
		st.ExpiresAt = s.expiresAt
		st.Usable = now.Before(s.expiresAt)
	}
	st.RetryAfter = time.Unix(0, c.nextAttempt.Load()).Sub(now)
	if st.RetryAfter < time.Second {
		st.RetryAfter = time.Second
	}
	return st
}

// Lookup returns the key named kid when the key set is usable at now.
func (c *Cache) Lookup(kid string, now time.Time) (Key, bool) {
	s := c.snap.Load()
	if s == nil || !now.Before(s.expiresAt) {
		return Key{}, false
	}
	k, ok := s.keys[kid]
	return k, ok
}

// Fetches returns how many fetches the cache has made, successful or not.
func (c *Cache) Fetches() int64 { return c.fetches.Load() }

// RefreshEarly asks for a refresh ahead of schedule because a token named a
// kid the cache does not hold, and waits (bounded by ctx and the fetch
// timeout) for it to finish. At most one early refresh starts per Cooldown;
// callers arriving while one is pending wait for that same fetch. It returns
// false without waiting when the cooldown refuses a new refresh.
func (c *Cache) RefreshEarly(ctx context.Context) bool {
	c.mu.Lock()
	ch := c.early
	if ch == nil {
		if !c.lastEarly.IsZero() && time.Since(c.lastEarly) < c.opts.Cooldown {
			c.mu.Unlock()
			return false
		}
		c.lastEarly = time.Now()
		ch = make(chan struct{})
		c.early = ch
		c.waiters = append(c.waiters, ch)
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	bound := time.NewTimer(c.opts.FetchTimeout + time.Second)
	defer bound.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-bound.C:
	}
	return false
}

// Run loads the key set and keeps it fresh until ctx is done: the first
// fetch at once, then a refresh when three quarters of the TTL have passed,
// and after a failure a retry with doubling back-off (250 ms up to 15 s, or
// a quarter of the TTL when that is shorter). Only this goroutine fetches,
// so there is never more than one fetch at a time.
func (c *Cache) Run(ctx context.Context) {
	retry := minRetry
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-c.kick:
		}
		c.mu.Lock()
		waiters := c.waiters
		c.waiters = nil
		c.mu.Unlock()

		c.nextAttempt.Store(time.Now().Add(c.opts.FetchTimeout).UnixNano())
		err := c.refresh(ctx)

		c.mu.Lock()
		for _, w := range waiters {
			if w == c.early {
				c.early = nil
			}
			close(w)
		}
		c.mu.Unlock()

		var wait time.Duration
		if err == nil {
			retry = minRetry
			// A floor keeps an absurdly small TTL from spinning this loop.
			wait = max(c.opts.TTL*3/4, 50*time.Millisecond)
		} else {
			if ctx.Err() != nil {
				return
			}
			wait = retry
			retry = min(retry*2, max(minRetry, min(maxRetry, c.opts.TTL/4)))
			c.log.Warn("identity key set fetch failed; any keys held are kept until they expire", "url", c.opts.URL,
				"err", err.Error(), "retry_in_ms", wait.Milliseconds(), "usable", c.Status(time.Now()).Usable)
		}
		c.nextAttempt.Store(time.Now().Add(wait).UnixNano())
		timer.Reset(wait)
	}
}

// refresh fetches and parses the key set and, only when it is good,
// replaces the held one.
func (c *Cache) refresh(ctx context.Context) error {
	c.fetches.Add(1)
	keys, err := c.fetch(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	prev := c.snap.Swap(&snapshot{keys: keys, fetchedAt: now, expiresAt: now.Add(c.opts.TTL)})
	if prev == nil || !sameKids(prev.keys, keys) {
		kids := make([]string, 0, len(keys))
		for kid := range keys {
			kids = append(kids, kid)
		}
		c.log.Info("identity key set loaded", "kids", kids)
	}
	return nil
}

// Check fetches and parses the key set now, bounded by ctx and the fetch
// timeout, and keeps nothing: readiness asks whether the key set can be
// had at this moment, which the held copy (good for its whole TTL) cannot
// tell. Errors: any failure to fetch or parse.
func (c *Cache) Check(ctx context.Context) error {
	_, err := c.fetch(ctx)
	return err
}

// fetch fetches and parses the key set.
func (c *Cache) fetch(ctx context.Context) (map[string]Key, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.opts.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes))
		return nil, fmt.Errorf("key set answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading key set: %w", err)
	}
	if len(body) > maxBodyBytes {
		return nil, errors.New("key set is larger than 1 MiB")
	}
	keys, skipped, err := ParseSet(body)
	for _, s := range skipped {
		c.log.Warn("identity key set entry ignored", "reason", s)
	}
	if err != nil {
		return nil, err
	}
	return keys, nil
}

func sameKids(a, b map[string]Key) bool {
	if len(a) != len(b) {
		return false
	}
	for kid := range a {
		if _, ok := b[kid]; !ok {
			return false
		}
	}
	return true
}
