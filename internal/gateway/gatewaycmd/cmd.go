// Package gatewaycmd is `platform gateway serve`: the gateway's
// configuration, validated at start, and its server.
package gatewaycmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/tokens"
)

// Config is the gateway's configuration (operations.md section 5), read
// by config.Load.
type Config struct {
	// Base is PORT, LOG_LEVEL and telemetry (the gateway has no database).
	service.Base
	// IdentityURL is identity's base address: the upstream for identity's
	// routes and for /auth/*. Empty leaves those routes answering 404
	// upstream_not_configured.
	IdentityURL string `env:"IDENTITY_URL" rule:"url"`
	// IdentityIssuer is the expected iss and the base of the key set's
	// address; IdentityURL when unset.
	IdentityIssuer string `env:"IDENTITY_ISSUER" rule:"url"`
	// JWKSTTLMillis is how long a fetched key set is used; Validate sets
	// JWKSTTL from it.
	JWKSTTLMillis int `env:"IDENTITY_JWKS_TTL_MS, default=300000" rule:"positive"`
	JWKSTTL       time.Duration
	// BoxURL, CourierURL, KeyholderURL and ParlorURL are the upstreams of
	// operations.md section 7; an empty one leaves its routes answering 404.
	BoxURL       string `env:"BOX_URL" rule:"url"`
	CourierURL   string `env:"COURIER_URL" rule:"url"`
	KeyholderURL string `env:"KEYHOLDER_URL" rule:"url"`
	PantryURL    string `env:"PANTRY_URL" rule:"url"`
	MuseURL      string `env:"MUSE_URL" rule:"url"`
	ParlorURL    string `env:"PARLOR_URL" rule:"url"`
	BillingURL   string `env:"BILLING_URL" rule:"url"`
	DarkroomURL  string `env:"DARKROOM_URL" rule:"url"`
	// RedisURL (optional) shares rate limits across replicas and enables
	// /auth/*.
	RedisURL string `env:"REDIS_URL"`
	// Trusted is TRUSTED_PROXIES: how many proxies in front append to
	// X-Forwarded-For (platform.md section 8), or the proxies' addresses
	// and CIDR prefixes, comma-separated (such as parlor's, whose API calls
	// carry the browser's address). Validate sets TrustedProxies or
	// TrustedNets from it.
	Trusted        string `env:"TRUSTED_PROXIES, default=0"`
	TrustedProxies int
	TrustedNets    []netip.Prefix
	// RateLimit is requests per minute per caller.
	RateLimit int `env:"GATEWAY_RATE_LIMIT, default=600" rule:"positive"`
	// AllowedOrigins may make cookie-authenticated state changes
	// (comma-separated; empty means the request's own host).
	AllowedOrigins []string `env:"GATEWAY_ALLOWED_ORIGINS"`
	// RedisKeyPrefix starts every Redis key the gateway writes; "gateway:"
	// unless set (tests use a unique one).
	RedisKeyPrefix string
	// Documents are the services' OpenAPI documents by service name, which
	// /openapi.json merges; the binary's wiring passes apidocs.Public()
	// to NewCommand.
	Documents map[string][]byte
}

// Validate implements config.Validator: the rules that span fields, and
// the values derived from the ones read.
func (c *Config) Validate() error {
	for _, u := range []*string{&c.IdentityURL, &c.IdentityIssuer, &c.BoxURL, &c.CourierURL, &c.KeyholderURL, &c.PantryURL, &c.ParlorURL, &c.BillingURL, &c.DarkroomURL, &c.MuseURL} {
		*u = strings.TrimRight(*u, "/")
	}
	if c.JWKSTTLMillis > 0 {
		c.JWKSTTL = time.Duration(c.JWKSTTLMillis) * time.Millisecond
	}
	if err := c.parseTrusted(); err != nil {
		return err
	}
	if c.RedisKeyPrefix == "" {
		c.RedisKeyPrefix = "gateway:"
	}
	if c.IdentityIssuer == "" {
		c.IdentityIssuer = c.IdentityURL
	}
	if c.IdentityIssuer == "" {
		return errors.New("IDENTITY_ISSUER: is required (or IDENTITY_URL, its default): tokens are verified against the issuer's key set")
	}
	if c.IdentityURL == "" && c.BoxURL == "" && c.CourierURL == "" && c.KeyholderURL == "" && c.PantryURL == "" && c.ParlorURL == "" && c.BillingURL == "" && c.DarkroomURL == "" && c.MuseURL == "" {
		return errors.New("IDENTITY_URL: is required unless another upstream (BOX_URL, COURIER_URL, KEYHOLDER_URL, PARLOR_URL) is set: a gateway with no upstream serves nothing")
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			// The URL may hold a password: it is not echoed.
			return errors.New("REDIS_URL: must be a well-formed redis:// or rediss:// URL (redis[s]://[user:password@]host[:port][/db])")
		}
	}
	var origins []string
	for _, o := range c.AllowedOrigins {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("GATEWAY_ALLOWED_ORIGINS: each entry must be an origin such as https://app.example.com, got %q", o)
		}
		origins = append(origins, u.Scheme+"://"+strings.ToLower(u.Host))
	}
	c.AllowedOrigins = origins
	return nil
}

// parseTrusted reads TRUSTED_PROXIES: a whole number of proxies, or a list
// of addresses and prefixes.
func (c *Config) parseTrusted() error {
	v := strings.TrimSpace(c.Trusted)
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return fmt.Errorf("TRUSTED_PROXIES: must be a whole number of proxies (0 or more) or a list of addresses, got %q", v)
		}
		c.TrustedProxies, c.TrustedNets = n, nil
		return nil
	}
	c.TrustedProxies, c.TrustedNets = 0, nil
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			c.TrustedNets = append(c.TrustedNets, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(e)
		if err != nil {
			return fmt.Errorf("TRUSTED_PROXIES: each entry must be an address or a CIDR prefix such as 10.0.0.0/8, got %q", e)
		}
		ip = ip.Unmap()
		c.TrustedNets = append(c.TrustedNets, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return nil
}

// NewCommand is `platform gateway`; docs are the services' OpenAPI
// documents by service name (apidocs.Public), merged at /openapi.json.
func NewCommand(docs map[string][]byte) service.Command[Config, *Config] {
	return service.Command[Config, *Config]{
		Name:        "gateway",
		Summary:     "the edge",
		DefaultPort: 8080,
		Serve:       Serve,
		Process: func(cfg *Config, logger *slog.Logger) {
			cfg.Documents = docs
			if cfg.RedisURL != "" {
				// The client's logger is process-wide; only the process's own
				// entry point sets it, so tests of Serve see no global change.
				redis.SetLogger(redisLogger{log: logger})
			}
		},
	}
}

// Serve runs the gateway on ln until ctx is done, then drains in-flight
// requests and returns (service.Serve). The key cache outlives ctx while
// they drain.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	return service.Serve(ctx, ln, cfg.Base, logger, service.Spec{
		Name:  "gateway",
		Start: func(ctx context.Context, app *service.App) (http.Handler, error) { return start(ctx, cfg, app) },
		// The server reads header blocks past the gateway's own limit
		// (gateway.MaxHeaderBytes), so an oversized one is answered by the
		// gateway in the route's envelope, not by net/http in text/plain.
		Server: func(srv *http.Server) { srv.MaxHeaderBytes = gateway.ServerMaxHeaderBytes },
	})
}

// start builds the gateway: the key cache, the upstreams, the limiter and
// the browser sessions.
func start(ctx context.Context, cfg Config, app *service.App) (http.Handler, error) {
	logger, metrics, tracing := app.Logger, app.Metrics, app.Tracing
	keys := tokens.New(tokens.Options{
		URL:    strings.TrimRight(cfg.IdentityIssuer, "/") + "/.well-known/jwks.json",
		TTL:    cfg.JWKSTTL,
		Logger: logger,
	})
	app.Go(keys.Run)
	metrics.KeySet(keys)

	opts := gateway.Options{
		Verifier:       tokens.NewVerifier(keys, cfg.IdentityIssuer),
		Keys:           keys,
		TrustedProxies: cfg.TrustedProxies,
		TrustedNets:    cfg.TrustedNets,
		AllowedOrigins: cfg.AllowedOrigins,
		Documents:      cfg.Documents,
		Logger:         logger,
	}
	if tracing != nil || metrics != nil {
		opts.Transport = metrics.Upstreams(observe.Transport(gateway.NewHTTPTransport()))
	}
	for _, u := range []struct {
		name, env, value string
		dst              **url.URL
	}{
		{gateway.Identity, "IDENTITY_URL", cfg.IdentityURL, &opts.IdentityURL},
		{gateway.Box, "BOX_URL", cfg.BoxURL, &opts.BoxURL},
		{gateway.Courier, "COURIER_URL", cfg.CourierURL, &opts.CourierURL},
		{gateway.Keyholder, "KEYHOLDER_URL", cfg.KeyholderURL, &opts.KeyholderURL},
		{gateway.Pantry, "PANTRY_URL", cfg.PantryURL, &opts.PantryURL},
		{gateway.Muse, "MUSE_URL", cfg.MuseURL, &opts.MuseURL},
		{gateway.Parlor, "PARLOR_URL", cfg.ParlorURL, &opts.ParlorURL},
		{gateway.Billing, "BILLING_URL", cfg.BillingURL, &opts.BillingURL},
		{gateway.Darkroom, "DARKROOM_URL", cfg.DarkroomURL, &opts.DarkroomURL},
	} {
		parsed, err := optionalURL(u.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.env, err)
		}
		*u.dst = parsed
		if parsed == nil {
			logger.Info(u.env+" is unset: "+u.name+"'s routes answer 404", "upstream", u.name)
		}
	}

	if cfg.RedisURL != "" {
		rdb, err := NewRedisClient(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		app.OnStop(func() { rdb.Close() })
		opts.Limiter = ratelimit.NewRedis(rdb, cfg.RateLimit, cfg.RedisKeyPrefix+"ratelimit:", logger)
		opts.Sessions = session.New(rdb, cfg.RedisKeyPrefix)
		opts.RedisPing = func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
	} else {
		opts.Limiter = ratelimit.NewLocal(cfg.RateLimit)
	}

	opts.Limiter = countRejections(opts.Limiter, metrics)
	g := gateway.New(opts)
	logger.Info("gateway configured", "identity_url", cfg.IdentityURL, "box_url", cfg.BoxURL,
		"courier_url", cfg.CourierURL, "keyholder_url", cfg.KeyholderURL, "pantry_url", cfg.PantryURL, "parlor_url", cfg.ParlorURL, "billing_url", cfg.BillingURL, "darkroom_url", cfg.DarkroomURL, "muse_url", cfg.MuseURL,
		"issuer", cfg.IdentityIssuer, "jwks_ttl_ms", cfg.JWKSTTL.Milliseconds(), "redis", cfg.RedisURL != "",
		"auth_routes", authRoutesWords(g.BrowserSessions()), "trusted_proxies", cfg.Trusted, "rate_limit_per_minute", cfg.RateLimit)
	return g, nil
}

// authRoutesWords says what the gateway's /auth/* routes do: a bare
// false read like a fault, while without Redis they are simply off and
// the web app signs in through identity as before.
func authRoutesWords(on bool) string {
	if on {
		return "served: /auth/* keeps browser sessions in Redis"
	}
	return "off: /auth/* needs REDIS_URL; the web app's sign-in does not use them"
}

// redisLogger carries the Redis client's own log lines (connection pool
// notices, which it writes as plain text by default) into slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "redis")
}

// NewRedisClient returns a client for redisURL with the edge's bounds: a
// limiter decision must not wait on a struggling Redis, so dials, reads and
// writes are short and failed commands are not retried (the limiter falls
// back instead). Values set in the URL's query win.
func NewRedisClient(redisURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, errors.New("not a well-formed redis URL")
	}
	u, _ := url.Parse(redisURL)
	q := u.Query()
	if !q.Has("dial_timeout") {
		opt.DialTimeout = time.Second
	}
	if !q.Has("read_timeout") {
		opt.ReadTimeout = 500 * time.Millisecond
	}
	if !q.Has("write_timeout") {
		opt.WriteTimeout = 500 * time.Millisecond
	}
	if !q.Has("max_retries") {
		opt.MaxRetries = -1
	}
	return redis.NewClient(opt), nil
}

func optionalURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	return url.Parse(s)
}
