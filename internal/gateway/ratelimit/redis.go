package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

const (
	// redisTimeout bounds one limiter round trip; a slower Redis is treated
	// as down for that request.
	redisTimeout = 250 * time.Millisecond
	// redisBackoff is how long the limiter stays on the local fallback after
	// a Redis failure before trying Redis again, so a hanging Redis costs
	// one timeout per backoff rather than one per request.
	redisBackoff = time.Second
	// logEvery spaces out the fallback warnings.
	logEvery = 30 * time.Second
)

// Redis is a limiter shared by every replica through Redis, using GCRA in a
// single script call per decision. When Redis fails it answers from its
// per-process fallback.
type Redis struct {
	limiter  *redis_rate.Limiter
	limit    redis_rate.Limit
	prefix   string
	fallback *Local
	log      *slog.Logger

	downUntil atomic.Int64 // unix nanoseconds; Redis is skipped until then
	lastLog   atomic.Int64
	fallbacks atomic.Int64
}

// NewRedis returns a limiter allowing perMinute requests per minute per key,
// counted in rdb under keys starting with prefix (redis_rate adds its own
// "rate:" before it), and falling back to a per-process limiter with the same
// allowance when Redis fails.
func NewRedis(rdb redis.UniversalClient, perMinute int, prefix string, logger *slog.Logger) *Redis {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Redis{
		limiter:  redis_rate.NewLimiter(rdb),
		limit:    redis_rate.PerMinute(perMinute),
		prefix:   prefix,
		fallback: NewLocal(perMinute),
		log:      logger,
	}
}

// Allow takes one request from key's shared allowance, or from the local
// fallback when Redis is failing.
func (r *Redis) Allow(ctx context.Context, key string) Decision {
	now := time.Now()
	if now.UnixNano() < r.downUntil.Load() {
		return r.fallBack(key, now)
	}
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	res, err := r.limiter.Allow(rctx, r.prefix+key, r.limit)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			// The caller went away; Redis is not to blame.
			return r.fallBack(key, now)
		}
		r.downUntil.Store(now.Add(redisBackoff).UnixNano())
		if last := r.lastLog.Load(); now.UnixNano()-last >= int64(logEvery) && r.lastLog.CompareAndSwap(last, now.UnixNano()) {
			r.log.Warn("rate limiter cannot reach Redis; using per-process limits",
				"err", err.Error(), "fallbacks_so_far", r.fallbacks.Load())
		}
		return r.fallBack(key, now)
	}
	d := Decision{
		Allowed:    res.Allowed > 0,
		Limit:      r.limit.Rate,
		Period:     r.limit.Period,
		Remaining:  res.Remaining,
		ResetAfter: max(0, res.ResetAfter),
	}
	if !d.Allowed {
		d.RetryAfter = max(0, res.RetryAfter)
	}
	return d
}

func (r *Redis) fallBack(key string, now time.Time) Decision {
	r.fallbacks.Add(1)
	return r.fallback.allowAt(key, now)
}

// Fallbacks returns how many decisions the local fallback has made.
func (r *Redis) Fallbacks() int64 { return r.fallbacks.Load() }
