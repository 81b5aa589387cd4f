// Package gatewaytest gives the gateway's tests a scoped Redis connection.
package gatewaytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Redis returns a client for TEST_REDIS_URL and a key prefix unique to the
// test, "test:<scope>:<random>:", or skips the test when no Redis is
// configured. The client is closed, and every key containing the prefix
// deleted, when the test ends.
func Redis(t testing.TB, scope string) (*redis.Client, string) {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		t.Skip("TEST_REDIS_URL is not set")
	}
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("TEST_REDIS_URL unreachable: %v", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	prefix := "test:" + scope + ":" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		// Libraries may put their own prefix before ours (redis_rate
		// writes "rate:<key>"), hence the leading wildcard.
		iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
	return rdb, prefix
}
