package gatewaycmd

import (
	"context"
	"strings"

	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/observe"
)

// countRejections wraps the limiter so every request it refuses counts in
// platform_gateway_rate_limit_rejections_total by scope: the allowance that
// was spent (the caller's address, session, token or API key), never the
// key itself. Without metrics it returns l.
func countRejections(l ratelimit.Limiter, m *observe.Metrics) ratelimit.Limiter {
	c := m.Counter("platform_gateway_rate_limit_rejections_total",
		"Requests the gateway refused with 429, by the allowance spent: ip, session, token or api_key.", "scope")
	if c == nil {
		return l
	}
	return rejections{Limiter: l, scopes: observe.NewOutcomes(c, "ip", "session", "token", "api_key")}
}

type rejections struct {
	ratelimit.Limiter
	scopes *observe.Outcomes
}

// scopes names the gateway's key prefixes (gateway.sessionKey and the
// address and API-key allowances).
var scopes = map[string]string{"ip": "ip", "sid": "session", "tok": "token", "key": "api_key"}

func (r rejections) Allow(ctx context.Context, key string) ratelimit.Decision {
	d := r.Limiter.Allow(ctx, key)
	if !d.Allowed {
		prefix, _, _ := strings.Cut(key, ":")
		r.scopes.Inc(scopes[prefix])
	}
	return d
}
