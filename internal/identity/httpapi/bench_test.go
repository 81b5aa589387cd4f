package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// benchmark runs req against a fresh server per engine, one request per
// iteration, and reports requests per second beside ns/op.
func benchmark(b *testing.B, cfg identitytest.Config, setup func(b *testing.B, s *server) (method, path string, body any, opts []opt), status int) {
	for _, engine := range sqltest.Engines() {
		b.Run(string(engine), func(b *testing.B) {
			s := newServer(b, engine, cfg)
			method, path, body, opts := setup(b, s)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if r := s.do(b, method, path, body, opts...); r.Code != status {
					b.Fatalf("%s %s = %d: %s", method, path, r.Code, r.Body)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkLogin is one POST /v1/session with the production argon2id
// parameters: the figure is dominated by the hash, which is the point.
func BenchmarkLogin(b *testing.B) {
	benchmark(b, identitytest.Config{Hash: identity.DefaultHashParams}, func(b *testing.B, s *server) (string, string, any, []opt) {
		s.do(b, "POST", "/v1/users", map[string]string{"email": "bench@example.com", "password": identitytest.Password}).want(b, http.StatusCreated)
		return "POST", "/v1/session", []byte(`{"email":"bench@example.com","password":"` + identitytest.Password + `"}`), nil
	}, http.StatusCreated)
}

// BenchmarkMe is one authenticated GET /v1/me: token verification and
// the session lookup.
func BenchmarkMe(b *testing.B) {
	benchmark(b, identitytest.Config{}, func(b *testing.B, s *server) (string, string, any, []opt) {
		_, tok := s.signUp(b, "bench@example.com")
		return "GET", "/v1/me", nil, []opt{bearer(tok)}
	}, http.StatusOK)
}

// BenchmarkGetAccount is one GET /v1/accounts/{id} by a member: token,
// session and membership in one query.
func BenchmarkGetAccount(b *testing.B) {
	benchmark(b, identitytest.Config{}, func(b *testing.B, s *server) (string, string, any, []opt) {
		_, tok := s.signUp(b, "bench@example.com")
		id := s.do(b, "POST", "/v1/accounts", map[string]string{"name": "Bench"}, bearer(tok)).want(b, http.StatusCreated).object(b)["id"].(string)
		return "GET", "/v1/accounts/" + id, nil, []opt{bearer(tok)}
	}, http.StatusOK)
}
