package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/platformco/platform/internal/httpx"
)

// probeTimeout bounds readiness: every dependency is asked at once, and one
// that has not answered within it is unavailable.
const probeTimeout = 2 * time.Second

// keySetDep is the key set's name in readiness.
const keySetDep = "key_set"

type readiness struct {
	Status string            `json:"status"`
	Deps   map[string]string `json:"deps"`
}

// readiness asks every dependency as it is now (operations.md section 8):
// each configured upstream's /readyz, the key set (usable in the cache and
// fetchable now), and Redis when configured. Only an unavailable key set
// makes the gateway unready (503): no request could be verified. Any other
// dependency down answers 200 "degraded", so one service's outage does not
// take every gateway out of rotation. The detail goes to the log.
func (g *Gateway) readiness(ctx context.Context) httpx.Readiness {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	checks := map[string]func(context.Context) error{keySetDep: g.checkKeys}
	for name, up := range g.upstreams {
		checks[name] = func(ctx context.Context) error { return g.probeUpstream(ctx, up) }
	}
	if g.opts.RedisPing != nil {
		checks["redis"] = g.opts.RedisPing
	}
	res := readiness{Status: "ok", Deps: make(map[string]string, len(checks))}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for name, check := range checks {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				res.Deps[name] = "ok"
				return
			}
			res.Deps[name] = "unavailable"
			g.log.Warn("readiness: dependency unavailable", "dep", name, "err", safeError(err))
		})
	}
	wg.Wait()
	for _, state := range res.Deps {
		if state != "ok" {
			res.Status = "degraded"
		}
	}
	if res.Deps[keySetDep] != "ok" {
		res.Status = "unavailable"
	}
	return httpx.Readiness{Ready: res.Status != "unavailable", Body: res}
}

// checkKeys is the key set's readiness: a usable set in the cache, and the
// set fetchable now.
func (g *Gateway) checkKeys(ctx context.Context) error {
	if st := g.opts.Keys.Status(time.Now()); !st.Usable {
		return errors.New("no usable key set is held")
	}
	return g.opts.Keys.Check(ctx)
}

// probeUpstream asks an upstream's own readiness; anything but 200 is
// unavailable.
func (g *Gateway) probeUpstream(ctx context.Context, up *upstream) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.base.JoinPath("/readyz").String(), nil)
	if err != nil {
		return err
	}
	resp, err := g.opts.Transport.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /readyz answered %d", up.name, resp.StatusCode)
	}
	return nil
}
