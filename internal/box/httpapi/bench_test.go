package httpapi_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// The benchmarks run the whole request path: the handler, the identity
// round trip to an httptest fake over loopback, and the database.

// BenchmarkGrant reports grants/s, each to a new account, on each engine.
func BenchmarkGrant(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			e := newEnv(b, engine, envOptions{})
			var n atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					acct := fmt.Sprintf("%08x-0000-4000-8000-%012x", i>>48, i&0xffffffffffff)
					res := e.do("POST", "/v1/operator/entitlements", staffToken, `{"account_id":"`+acct+`","product":"platform","source":"reconciled_payment"}`)
					if res.status != 201 {
						b.Errorf("grant: %d %s", res.status, res.raw)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
		})
	}
}

// BenchmarkArtifactCheck reports artifact checks/s (each issuing a
// capability) against one ranged grant, on each engine.
func BenchmarkArtifactCheck(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			e := newEnv(b, engine, envOptions{})
			e.grant(account, "platform", "^1.0.0")
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res := e.do("POST", "/v1/accounts/"+account+"/artifact_fetches", buyerToken, `{"artifact":"platform","version_range":"~1.4.0"}`)
					if res.status != 201 {
						b.Errorf("artifact check: %d %s", res.status, res.raw)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checks/s")
		})
	}
}
