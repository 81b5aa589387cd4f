package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/platformco/platform/internal/gateway/gatewaytest"
)

func TestLocalAllowsBurstThenRefuses(t *testing.T) {
	l := NewLocal(3)
	now := time.Now()
	for i := range 3 {
		d := l.allowAt("a", now)
		if !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
			t.Fatalf("request %d: %+v, want allowed with %d remaining", i, d, 2-i)
		}
	}
	d := l.allowAt("a", now)
	if d.Allowed {
		t.Fatal("fourth request allowed, want refused")
	}
	if d.RetryAfter <= 0 || d.RetryAfter > 20*time.Second+time.Millisecond {
		t.Fatalf("RetryAfter = %v, want about 20s (one token at 3/min)", d.RetryAfter)
	}
	if !l.allowAt("b", now).Allowed {
		t.Fatal("another key was refused")
	}
	if !l.allowAt("a", now.Add(21*time.Second)).Allowed {
		t.Fatal("refused after a token was refilled")
	}
}

func TestLocalSweepForgetsIdleCallers(t *testing.T) {
	l := NewLocal(60)
	now := time.Now()
	for _, k := range []string{"a", "b", "c"} {
		l.allowAt(k, now)
	}
	if l.Len() != 3 {
		t.Fatalf("Len = %d, want 3", l.Len())
	}
	l.allowAt("d", now.Add(2*time.Minute))
	if l.Len() != 1 {
		t.Fatalf("Len after sweep = %d, want 1 (only the new caller)", l.Len())
	}
}

// TestLocalConcurrentCallersShareOneAllowance races many goroutines on one
// key: exactly the limit gets through.
func TestLocalConcurrentCallersShareOneAllowance(t *testing.T) {
	l := NewLocal(50)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.Allow(context.Background(), "k").Allowed {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	// Refill during the race may add a token or two; the limit holds.
	if got := allowed.Load(); got < 50 || got > 52 {
		t.Fatalf("allowed = %d, want 50 (give or take refill)", got)
	}
}

// TestRedisSharedAcrossReplicas races two limiters (two gateway replicas)
// over one Redis: together they allow exactly the limit.
func TestRedisSharedAcrossReplicas(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "ratelimit")
	a := NewRedis(rdb, 20, prefix, nil)
	b := NewRedis(rdb, 20, prefix, nil)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if i%2 == 1 {
				l = b
			}
			if l.Allow(context.Background(), "user:u1").Allowed {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got < 20 || got > 21 {
		t.Fatalf("allowed across replicas = %d, want 20", got)
	}
	if a.Fallbacks()+b.Fallbacks() != 0 {
		t.Fatalf("fallbacks = %d with Redis up, want 0", a.Fallbacks()+b.Fallbacks())
	}
	d := a.Allow(context.Background(), "user:u1")
	if d.Allowed || d.RetryAfter <= 0 || d.Limit != 20 {
		t.Fatalf("decision over the limit = %+v", d)
	}
	if !a.Allow(context.Background(), "user:u2").Allowed {
		t.Fatal("another caller was refused")
	}
}

// TestRedisDownFallsBackToLocalLimits points the limiter at a port nobody
// listens on: callers are limited per process, not all refused.
func TestRedisDownFallsBackToLocalLimits(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	l := NewRedis(rdb, 3, "test:", nil)
	for i := range 3 {
		if !l.Allow(context.Background(), "ip:192.0.2.1").Allowed {
			t.Fatalf("request %d refused with Redis down, want the local allowance", i)
		}
	}
	if l.Allow(context.Background(), "ip:192.0.2.1").Allowed {
		t.Fatal("fourth request allowed; the fallback must still limit")
	}
	if !l.Allow(context.Background(), "ip:192.0.2.2").Allowed {
		t.Fatal("another caller refused with Redis down")
	}
	if l.Fallbacks() != 5 {
		t.Fatalf("fallbacks = %d, want 5", l.Fallbacks())
	}
}
