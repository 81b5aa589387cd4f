package httpapi_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// BenchmarkPasswordResetTiming alternates POST /v1/password/reset for a
// registered and an unknown address, with the production argon2id
// parameters, and reports each one's median: the two must stay
// comparable (target within 20%) so the timing does not tell which
// addresses are registered.
func BenchmarkPasswordResetTiming(b *testing.B) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			s := newServer(b, engine, identitytest.Config{Hash: identity.DefaultHashParams})
			s.do(b, "POST", "/v1/users", map[string]string{"email": "known@example.com", "password": identitytest.Password}).want(b, http.StatusCreated)
			known := []byte(`{"email":"known@example.com"}`)
			unknown := []byte(`{"email":"unknown@example.com"}`)
			var kt, ut []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				body, into := known, &kt
				if i%2 == 1 {
					body, into = unknown, &ut
				}
				start := time.Now()
				if r := s.do(b, "POST", "/v1/password/reset", body); r.Code != http.StatusAccepted {
					b.Fatalf("reset = %d: %s", r.Code, r.Body)
				}
				*into = append(*into, time.Since(start))
			}
			if len(kt) == 0 || len(ut) == 0 {
				return
			}
			mk, mu := median(kt), median(ut)
			b.ReportMetric(float64(mk.Microseconds()), "known-median-µs")
			b.ReportMetric(float64(mu.Microseconds()), "unknown-median-µs")
			b.ReportMetric(float64(mk)/float64(mu), "known/unknown")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
