//go:build e2e

package reliability

import (
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/testutil"
)

func startGateway(t *testing.T, s *stack, extra e2e.Env) *e2e.Proc {
	t.Helper()
	env := e2e.Env{
		"IDENTITY_URL":         s.identity.URL,
		"IDENTITY_ISSUER":      s.identityEnv["IDENTITY_ISSUER"],
		"BOX_URL":              s.box.URL,
		"IDENTITY_JWKS_TTL_MS": "1000",
	}
	for k, v := range extra {
		env[k] = v
	}
	return e2e.Start(t, env, "gateway", "serve")
}

// TestRedisOutage: with Redis stopped the gateway keeps serving, limits
// callers per process (429 past the limit, never for everyone), and says so
// in readiness, which stays 200 "degraded" (operations.md section 8); with
// Redis back readiness is "ok" again by itself.
func TestRedisOutage(t *testing.T) {
	redis := startRedis(t)
	s := newStack(t, startPostgres(t), stackOptions{})
	const limit = 25
	gw := startGateway(t, s, e2e.Env{"REDIS_URL": redis.redisURL(), "GATEWAY_RATE_LIMIT": strconv.Itoa(limit)})
	buyer := s.register(t, "buyer@example.com")
	c := e2e.Client{Base: gw.URL, Token: buyer.token}
	testutil.Eventually(t, 10*time.Second, "gateway ready", func() bool { return ready(gw.URL) == 200 })
	ok := c.Do(t, "GET", "/readyz", nil).JSON(t)
	if deps, _ := ok["deps"].(map[string]any); deps["redis"] != "ok" {
		t.Fatalf("readyz with Redis up = %v", ok)
	}
	c.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusOK)

	redis.stop(t, syscall.SIGTERM)
	testutil.Eventually(t, 10*time.Second, "readiness to report Redis", func() bool {
		r := c.Do(t, "GET", "/readyz", nil)
		body := r.JSON(t)
		deps, _ := body["deps"].(map[string]any)
		return r.Status == 200 && body["status"] == "degraded" && deps["redis"] == "unavailable" &&
			deps["identity"] == "ok" && deps["key_set"] == "ok"
	})
	if got := healthz(gw.URL); got != 200 {
		t.Errorf("gateway /healthz = %d with Redis down", got)
	}
	served, limited := 0, 0
	for i := 0; i < limit*2; i++ {
		switch r := c.Do(t, "GET", "/v1/me", nil); r.Status {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			limited++
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		default:
			t.Fatalf("request %d with Redis down: %d %s", i, r.Status, r.Body)
		}
	}
	if served == 0 || served > limit || limited == 0 {
		t.Errorf("with Redis down: %d served, %d limited; want the per-process limit of %d", served, limited, limit)
	}

	redis.start(t)
	testutil.Eventually(t, 15*time.Second, "readiness ok with Redis back", func() bool {
		r := c.Do(t, "GET", "/readyz", nil)
		return r.Status == 200 && r.JSON(t)["status"] == "ok"
	})
	if gw.Exited() {
		t.Fatal("the gateway exited")
	}
}

// TestGracefulShutdownDrains: requests in flight when box and identity get
// SIGTERM finish with their normal answer; nothing accepted before the
// signal gets a 5xx, and the processes exit 0.
func TestGracefulShutdownDrains(t *testing.T) {
	// Box gives identity 5 s, far beyond the proxy's 600 ms delay: on a
	// loaded CI machine the stack's usual 1 s left too thin a margin, and a
	// grant that timed out answered 503 for a reason other than shutdown.
	s := newStack(t, startPostgres(t), stackOptions{box: e2e.Env{"BOX_IDENTITY_TIMEOUT": "5s"}})
	op := s.staff(t, "operator@example.com")
	buyer := s.register(t, "buyer@example.com")

	// Box: identity answers slowly (well within BOX_IDENTITY_TIMEOUT), so
	// grants are provably in flight when the signal arrives.
	s.proxy.set(faultMode{delay: 600 * time.Millisecond})
	const n = 8
	type answer struct {
		status int
		body   map[string]any
		err    error
	}
	answers := make(chan answer, n)
	for i := 0; i < n; i++ {
		go func() {
			status, body, err := send("POST", s.box.URL+"/v1/operator/entitlements", op.token, map[string]any{"account_id": uuidFor(i), "product": "kit"})
			answers <- answer{status, body, err}
		}()
	}
	testutil.Eventually(t, 10*time.Second, "grants in flight", func() bool { return s.proxy.inflight.Load() == n })
	s.box.Signal(syscall.SIGTERM)
	wrong := false
	for i := 0; i < n; i++ {
		a := <-answers
		if a.err != nil || a.status != http.StatusCreated {
			t.Errorf("in-flight grant during shutdown: %d %v %v, want 201", a.status, a.body, a.err)
			wrong = true
		}
	}
	exited := s.box.Wait(25*time.Second) && s.box.ExitCode() == 0
	if !exited {
		t.Errorf("box did not exit 0 after draining")
	}
	if wrong || !exited {
		// A wrong answer names a code; box's log says which dependency
		// (and why) when that code is unavailable.
		t.Logf("box's log:\n%s", s.box.Logs())
	}
	s.proxy.set(faultMode{})
	if got := count(t, s.boxDB, `SELECT count(*) FROM entitlements`); got != n {
		t.Errorf("%d entitlements stored, want %d", got, n)
	}

	// Identity under steady load: no 5xx, whatever the timing.
	l := startLoad(6, func(w, i int) (int, string, error) {
		status, _, err := send("GET", s.identity.URL+"/v1/me", buyer.token, nil)
		return status, "", err
	})
	testutil.Eventually(t, 10*time.Second, "load on identity", func() bool { l.res.mu.Lock(); defer l.res.mu.Unlock(); return l.res.statuses[200] > 50 })
	s.identity.Signal(syscall.SIGTERM)
	if !s.identity.Wait(25 * time.Second) {
		t.Fatal("identity did not stop")
	}
	res := l.stop()
	for status, c := range res.statuses {
		if status >= 500 {
			t.Errorf("%d answers of %d during identity's shutdown", c, status)
		}
	}
	if s.identity.ExitCode() != 0 {
		t.Errorf("identity exit %d", s.identity.ExitCode())
	}
}

func uuidFor(i int) string {
	return "aaaaaaaa-0000-4000-8000-" + strconv.FormatInt(int64(100000000000+i), 10)
}
