// Package ratelimit limits requests per caller key: per process with
// golang.org/x/time/rate, or shared across replicas through Redis with GCRA
// (go-redis/redis_rate, one round trip per decision). The Redis limiter falls
// back to the per-process one whenever Redis fails, so a Redis outage
// degrades to per-replica limits instead of refusing every caller.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Decision is the outcome of one request against a caller's limit.
type Decision struct {
	Allowed   bool
	Limit     int           // requests per Period
	Period    time.Duration // the window the limit is expressed in
	Remaining int           // requests still allowed right now
	// RetryAfter is how long until one more request is allowed (0 when
	// allowed).
	RetryAfter time.Duration
	// ResetAfter is how long until the caller's allowance is full again.
	ResetAfter time.Duration
}

// Limiter decides whether the caller named key may make one more request.
type Limiter interface {
	Allow(ctx context.Context, key string) Decision
}

var (
	_ Limiter = (*Local)(nil)
	_ Limiter = (*Redis)(nil)
)

// Local is a per-process limiter: a token bucket per key holding perMinute
// tokens, refilled at perMinute per minute (the same allowance GCRA gives
// with burst = rate). Idle buckets are forgotten so memory follows the
// number of active callers.
type Local struct {
	perMinute int
	every     rate.Limit

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// NewLocal returns a per-process limiter allowing perMinute requests per
// minute per key.
func NewLocal(perMinute int) *Local {
	return &Local{
		perMinute: perMinute,
		every:     rate.Limit(float64(perMinute) / 60),
		buckets:   make(map[string]*rate.Limiter),
		lastSweep: time.Now(),
	}
}

// Allow takes one request from key's bucket.
func (l *Local) Allow(_ context.Context, key string) Decision {
	return l.allowAt(key, time.Now())
}

func (l *Local) allowAt(key string, now time.Time) Decision {
	l.mu.Lock()
	if now.Sub(l.lastSweep) >= time.Minute {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(l.every, l.perMinute)
		l.buckets[key] = b
	}
	l.mu.Unlock()

	d := Decision{Limit: l.perMinute, Period: time.Minute}
	res := b.ReserveN(now, 1)
	if delay := res.DelayFrom(now); delay > 0 {
		res.CancelAt(now)
		d.RetryAfter = delay
	} else {
		d.Allowed = true
	}
	tokens := b.TokensAt(now)
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.ResetAfter = time.Duration((float64(l.perMinute) - tokens) / float64(l.every) * float64(time.Second))
	return d
}

// sweep drops buckets that are full again: forgetting them changes nothing.
func (l *Local) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.perMinute) {
			delete(l.buckets, k)
		}
	}
	l.lastSweep = now
}

// Len returns how many callers have a bucket.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
