package session_test

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/platformco/platform/internal/gateway/gatewaytest"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/testutil"
)

const token = "eyJhbGciOiJFZERTQSJ9.secret-identity-token.sig"

func TestStoreLifecycle(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "session")
	s := session.New(rdb, prefix)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour).Truncate(time.Second).UTC()

	id, err := s.Create(ctx, token, exp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != token || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("Get = %+v, want the stored token expiring %v", got, exp)
	}

	// Redis holds neither the id nor the token in the clear.
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys = %v (%v), want exactly one", keys, err)
	}
	if strings.Contains(keys[0], id) {
		t.Error("the Redis key contains the session id")
	}
	val, _ := rdb.Get(ctx, keys[0]).Result()
	if strings.Contains(val, "secret-identity-token") || strings.Contains(val, id) {
		t.Error("the Redis value holds the token or id in the clear")
	}
	ttl, _ := rdb.TTL(ctx, keys[0]).Result()
	if ttl <= 0 || ttl > time.Hour {
		t.Errorf("TTL = %v, want up to the token's expiry", ttl)
	}

	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, id); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, id); err != nil {
		t.Fatalf("second Delete: %v, want nil", err)
	}
}

func TestStoreRefusesUnknownAndTamperedIDs(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "session")
	s := session.New(rdb, prefix)
	ctx := context.Background()
	id, err := s.Create(ctx, token, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	flipped := []byte(id)
	if flipped[0] == 'A' {
		flipped[0] = 'B'
	} else {
		flipped[0] = 'A'
	}
	for _, bad := range []string{"", "short", string(flipped), id + "x", strings.Repeat("!", len(id))} {
		if _, err := s.Get(ctx, bad); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", bad, err)
		}
	}
}

func TestStoreExpires(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "session")
	s := session.New(rdb, prefix)
	ctx := context.Background()
	id, err := s.Create(ctx, token, time.Now().Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the session to expire", func() bool {
		_, err := s.Get(ctx, id)
		return errors.Is(err, session.ErrNotFound)
	})
	if _, err := s.Create(ctx, token, time.Now().Add(-time.Second)); err == nil {
		t.Fatal("Create accepted an expired token")
	}
}

// TestStoreConcurrentCreatesAreDistinct races session creation: every
// session gets its own id and its own token back.
func TestStoreConcurrentCreatesAreDistinct(t *testing.T) {
	rdb, prefix := gatewaytest.Redis(t, "session")
	s := session.New(rdb, prefix)
	ctx := context.Background()
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := s.Create(ctx, token+hex.EncodeToString([]byte{byte(i)}), time.Now().Add(time.Minute))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate session id")
		}
		seen[id] = true
		got, err := s.Get(ctx, id)
		if err != nil || got.Token != token+hex.EncodeToString([]byte{byte(i)}) {
			t.Fatalf("session %d = %+v, %v", i, got, err)
		}
	}
}

func TestStoreRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s := session.New(rdb, "test:")
	if _, err := s.Create(context.Background(), token, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("Create succeeded with Redis down")
	}
	id := strings.Repeat("A", 43)
	if _, err := s.Get(context.Background(), id); err == nil || errors.Is(err, session.ErrNotFound) {
		t.Fatalf("Get with Redis down = %v, want a Redis error (not ErrNotFound)", err)
	}
}
