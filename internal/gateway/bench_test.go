package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/gatewaytest"
	"github.com/platformco/platform/internal/gateway/jwks"
	"github.com/platformco/platform/internal/gateway/ratelimit"
)

// BenchmarkGatewayOverhead sends the same authenticated request to an
// upstream standing in for identity, directly and through the gateway
// (token verification, rate limit, proxy), in one run, over loopback TCP
// with keep-alive. The difference between the two is the gateway's cost.
func BenchmarkGatewayOverhead(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"0b7c1f7e-6a55-4d3b-9f0e-3d7b1c2a9e10","email":"ada@example.com"}`))
	})
	ks := gatewaytest.NewKeyServer(b, mux)
	cache := jwks.New(jwks.Options{URL: ks.JWKSURL(), TTL: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go cache.Run(ctx)
	for !cache.Status(time.Now()).Usable {
		time.Sleep(5 * time.Millisecond)
	}
	gw := gateway.New(gateway.Options{
		IdentityURL: mustURL(b, ks.URL),
		Verifier:    gateway.NewVerifier(cache, ks.Issuer),
		Keys:        cache,
		Limiter:     ratelimit.NewLocal(1 << 30),
	})
	front := httptest.NewServer(gw)
	defer front.Close()
	token := ks.Token(b, "k1", ks.Claims(userID, time.Hour))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	run := func(b *testing.B, base string) {
		req, _ := http.NewRequest("GET", base+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, ks.URL) })
	b.Run("via_gateway", func(b *testing.B) { run(b, front.URL) })
	b.Run("verify_only", func(b *testing.B) {
		v := gateway.NewVerifier(cache, ks.Issuer)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, token); err != nil {
				b.Fatal(err)
			}
		}
	})
}
