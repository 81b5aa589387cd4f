package gateway_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
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
	ks := tokenstest.NewKeyServer(b, mux)
	cache := usableKeys(b, ks)
	gw := gateway.New(gateway.Options{
		IdentityURL: mustURL(b, ks.URL),
		Verifier:    tokens.NewVerifier(cache, ks.Issuer),
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
		v := tokens.NewVerifier(cache, ks.Issuer)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(b.Context(), token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cannedUpstream answers every request in memory with the same bytes, so
// that BenchmarkGatewayEdge measures the gateway's own work and none of
// the sockets'.
type cannedUpstream struct{ body []byte }

func (u cannedUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(u.body)))
	h.Set("Date", "Wed, 25 Nov 2026 10:00:00 GMT")
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(u.body)), ContentLength: int64(len(u.body)),
		Request: req,
	}, nil
}

// BenchmarkGatewayEdge is the gateway's work on one authenticated read
// (routing, token check, rate limit, request log, proxying) with the
// upstream answered in memory and the log formatted but discarded: what
// the edge adds on top of the sockets a forwarder needs anyway.
func BenchmarkGatewayEdge(b *testing.B) {
	ks := tokenstest.NewKeyServer(b, http.NewServeMux())
	cache := usableKeys(b, ks)
	gw := gateway.New(gateway.Options{
		IdentityURL: mustURL(b, "http://127.0.0.1:1"),
		Verifier:    tokens.NewVerifier(cache, ks.Issuer),
		Keys:        cache,
		Limiter:     ratelimit.NewLocal(1 << 30),
		Transport:   cannedUpstream{body: []byte(`{"id":"0b7c1f7e-6a55-4d3b-9f0e-3d7b1c2a9e10","kind":"personal","name":"Ada"}`)},
		Logger:      slog.New(slog.DiscardHandler).With("service", "gateway"),
	})
	token := ks.Token(b, "k1", ks.Claims(userID, time.Hour))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/accounts/0b7c1f7e-6a55-4d3b-9f0e-3d7b1c2a9e10", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "fortio.org/fortio-1.75.3")
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// usableKeys returns a key cache of ks's key set once it can verify; the
// cache stops with the benchmark.
func usableKeys(b *testing.B, ks *tokenstest.KeyServer) *tokens.Cache {
	cache := tokens.New(tokens.Options{URL: ks.JWKSURL(), TTL: time.Hour})
	go cache.Run(b.Context())
	testutil.Eventually(b, 10*time.Second, "the key set", func() bool { return cache.Status(time.Now()).Usable })
	return cache
}
