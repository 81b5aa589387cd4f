package gateway

import (
	"context"
	"time"

	"github.com/platformco/platform/internal/httpx"
)

// redisPingTimeout bounds readiness's Redis check.
const redisPingTimeout = time.Second

type readiness struct {
	Status string            `json:"status"`
	Deps   map[string]string `json:"deps"`
}

// readiness names each dependency: identity is ok while the key cache holds
// a usable key set; redis, listed only when configured, is ok when it
// answers a PING within a second. Any dependency down makes it 503; the
// detail goes to the log, not the body.
func (g *Gateway) readiness(ctx context.Context) httpx.Readiness {
	res := readiness{Status: "ok", Deps: map[string]string{"identity": "ok"}}
	if st := g.opts.Keys.Status(time.Now()); !st.Usable {
		res.Deps["identity"] = "unavailable"
		res.Status = "unavailable"
		g.log.Warn("readiness: identity key set unusable", "loaded", st.Loaded, "expires_at", st.ExpiresAt)
	}
	if g.opts.RedisPing != nil {
		res.Deps["redis"] = "ok"
		pctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
		err := g.opts.RedisPing(pctx)
		cancel()
		if err != nil {
			res.Deps["redis"] = "unavailable"
			res.Status = "unavailable"
			g.log.Warn("readiness: redis unavailable", "error", err.Error())
		}
	}
	return httpx.Readiness{Ready: res.Status == "ok", Body: res}
}
