package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/service"
)

// keySetDep is the key set's name in readiness.
const keySetDep = "key_set"

// newReadiness names every dependency of readiness (operations.md section
// 8): the key set (usable in the cache and fetchable now), each configured
// upstream's /readyz and Redis when configured, each asked at once within
// service.DefaultCheckBound. Only an unavailable key set makes the gateway
// unready (503): no request could be verified. The others are optional:
// one down answers 200 "degraded", so one service's outage does not take
// every gateway out of rotation. The body is service.NamedDeps,
// {"status":"ok"|"degraded"|"unavailable","deps":{NAME:"ok"|"unavailable"}};
// the detail goes to the log, once per outage.
func (g *Gateway) newReadiness() *service.Readiness {
	r := service.NewReadiness(service.NamedDeps(nil), g.log)
	r.Add(service.Check{Name: keySetDep, Check: g.checkKeys})
	for name, up := range g.upstreams {
		r.Add(service.Check{Name: name, Optional: true, Check: func(ctx context.Context) error {
			return g.probeUpstream(ctx, up)
		}})
	}
	if g.opts.RedisPing != nil {
		r.Add(service.Check{Name: "redis", Optional: true, Check: g.opts.RedisPing})
	}
	return r
}

// readiness is /readyz's probe.
func (g *Gateway) readiness(ctx context.Context) httpx.Readiness { return g.ready.Probe(ctx) }

// checkKeys is the key set's readiness: a usable set in the cache, and the
// set fetchable now.
func (g *Gateway) checkKeys(ctx context.Context) error {
	if st := g.opts.Keys.Status(time.Now()); !st.Usable {
		return errors.New("no usable key set is held")
	}
	return g.opts.Keys.Check(ctx)
}

// probeUpstream asks an upstream's own readiness; anything but 200 is
// unavailable. Its error is safeError's, so the log names no URL.
func (g *Gateway) probeUpstream(ctx context.Context, up *upstream) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.base.JoinPath("/readyz").String(), nil)
	if err != nil {
		return errors.New(safeError(err))
	}
	resp, err := g.opts.Transport.RoundTrip(req)
	if err != nil {
		return errors.New(safeError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /readyz answered %d", up.name, resp.StatusCode)
	}
	return nil
}
