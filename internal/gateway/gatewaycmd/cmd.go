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
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/debugsrv"
	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/gateway/jwks"
	"github.com/platformco/platform/internal/gateway/ratelimit"
	"github.com/platformco/platform/internal/gateway/session"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

// Config is the gateway's configuration (operations.md section 5).
type Config struct {
	Port int // PORT, default 8080
	// IdentityURL is identity's base address (IDENTITY_URL): the upstream
	// for identity's routes and for /auth/*. Empty leaves those routes
	// answering 404 upstream_not_configured.
	IdentityURL string
	// IdentityIssuer is the expected iss and the base of the key set's
	// address (IDENTITY_ISSUER, default IdentityURL).
	IdentityIssuer string
	// JWKSTTL is how long a fetched key set is used (IDENTITY_JWKS_TTL_MS,
	// default 300000 ms).
	JWKSTTL time.Duration
	// BoxURL is box's base address (BOX_URL). Empty leaves box's routes
	// answering 404 upstream_not_configured.
	BoxURL string
	// CourierURL, KeyholderURL and ParlorURL (COURIER_URL, KEYHOLDER_URL,
	// PARLOR_URL) are the optional upstreams of operations.md section 7;
	// an empty one leaves its routes answering 404.
	CourierURL   string
	KeyholderURL string
	ParlorURL    string
	// RedisURL (REDIS_URL, optional) shares rate limits across replicas
	// and enables /auth/*.
	RedisURL string
	// TrustedProxies is how many proxies in front append to
	// X-Forwarded-For (TRUSTED_PROXIES, default 0).
	TrustedProxies int
	// RateLimit is requests per minute per caller (GATEWAY_RATE_LIMIT,
	// default 600).
	RateLimit int
	// AllowedOrigins may make cookie-authenticated state changes
	// (GATEWAY_ALLOWED_ORIGINS, comma-separated; empty means the request's
	// own host).
	AllowedOrigins []string
	// RedisKeyPrefix starts every Redis key the gateway writes; "gateway:"
	// unless set (tests use a unique one).
	RedisKeyPrefix string
	// DebugAddr (DEBUG_ADDR, loopback only) serves the profiling endpoints.
	DebugAddr string
	// MetricsAddr (METRICS_ADDR) serves Prometheus metrics at /metrics on
	// a listener of its own; empty serves none.
	MetricsAddr string
	// OTLPEndpoint (OTEL_EXPORTER_OTLP_ENDPOINT) exports traces over
	// OTLP/HTTP; empty exports none.
	OTLPEndpoint string
}

// LoadConfig reads and validates the gateway's configuration. The error
// names the first variable that breaks its rule.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := config.New(getenv)
	cfg := Config{
		Port:           r.Port("PORT", 8080),
		IdentityURL:    r.URL("IDENTITY_URL"),
		BoxURL:         r.URL("BOX_URL"),
		CourierURL:     r.URL("COURIER_URL"),
		KeyholderURL:   r.URL("KEYHOLDER_URL"),
		ParlorURL:      r.URL("PARLOR_URL"),
		JWKSTTL:        time.Duration(r.PositiveInt("IDENTITY_JWKS_TTL_MS", 300000)) * time.Millisecond,
		TrustedProxies: r.NonNegativeInt("TRUSTED_PROXIES", 0),
		RateLimit:      r.PositiveInt("GATEWAY_RATE_LIMIT", 600),
		RedisKeyPrefix: "gateway:",
		DebugAddr:      r.LoopbackAddr("DEBUG_ADDR"),
		MetricsAddr:    strings.TrimSpace(getenv("METRICS_ADDR")),
		OTLPEndpoint:   strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
	}
	if err := r.Err(); err != nil {
		return Config{}, err
	}
	cfg.IdentityIssuer = strings.TrimSpace(getenv("IDENTITY_ISSUER"))
	if cfg.IdentityIssuer != "" {
		if r.URL("IDENTITY_ISSUER"); r.Err() != nil {
			return Config{}, r.Err()
		}
	} else {
		cfg.IdentityIssuer = cfg.IdentityURL
	}
	if cfg.IdentityIssuer == "" {
		return Config{}, errors.New("IDENTITY_ISSUER: is required (or IDENTITY_URL, its default): tokens are verified against the issuer's key set")
	}
	if cfg.IdentityURL == "" && cfg.BoxURL == "" && cfg.CourierURL == "" && cfg.KeyholderURL == "" && cfg.ParlorURL == "" {
		return Config{}, errors.New("IDENTITY_URL: is required unless another upstream (BOX_URL, COURIER_URL, KEYHOLDER_URL, PARLOR_URL) is set: a gateway with no upstream serves nothing")
	}
	if v := strings.TrimSpace(getenv("REDIS_URL")); v != "" {
		if _, err := redis.ParseURL(v); err != nil {
			// The URL may hold a password: it is not echoed.
			return Config{}, errors.New("REDIS_URL: must be a well-formed redis:// or rediss:// URL (redis[s]://[user:password@]host[:port][/db])")
		}
		cfg.RedisURL = v
	}
	if v := strings.TrimSpace(getenv("GATEWAY_ALLOWED_ORIGINS")); v != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimSpace(o)
			if o == "" {
				continue
			}
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
				(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
				return Config{}, fmt.Errorf("GATEWAY_ALLOWED_ORIGINS: each entry must be an origin such as https://app.example.com, got %q", o)
			}
			cfg.AllowedOrigins = append(cfg.AllowedOrigins, u.Scheme+"://"+strings.ToLower(u.Host))
		}
	}
	return cfg, nil
}

// Serve runs the gateway on ln until ctx is done, then drains in-flight
// requests and returns.
func Serve(ctx context.Context, cfg Config, logger *slog.Logger, ln net.Listener) error {
	if cfg.DebugAddr != "" {
		_, stopDebug, err := debugsrv.Start(ctx, cfg.DebugAddr, logger)
		if err != nil {
			ln.Close()
			return fmt.Errorf("DEBUG_ADDR: %w", err)
		}
		defer stopDebug()
	}
	metrics, stopMetrics, err := observe.Start(ctx, "gateway", cfg.MetricsAddr, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	tracing, stopTracing, err := observe.StartTracing(ctx, "gateway", cfg.OTLPEndpoint)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() { _ = stopTracing(context.WithoutCancel(ctx)) }()
	// The key cache outlives ctx while in-flight requests drain, and stops
	// (and is waited for) when Serve returns.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	cacheDone := make(chan struct{})
	defer func() { stop(); <-cacheDone }()

	keys := jwks.New(jwks.Options{
		URL:    strings.TrimRight(cfg.IdentityIssuer, "/") + "/.well-known/jwks.json",
		TTL:    cfg.JWKSTTL,
		Logger: logger,
	})
	go func() { keys.Run(bg); close(cacheDone) }()
	metrics.KeySet(keys)

	opts := gateway.Options{
		Verifier:       gateway.NewVerifier(keys, cfg.IdentityIssuer),
		Keys:           keys,
		TrustedProxies: cfg.TrustedProxies,
		AllowedOrigins: cfg.AllowedOrigins,
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
		{gateway.Parlor, "PARLOR_URL", cfg.ParlorURL, &opts.ParlorURL},
	} {
		parsed, err := optionalURL(u.value)
		if err != nil {
			return fmt.Errorf("%s: %w", u.env, err)
		}
		*u.dst = parsed
		if parsed == nil {
			logger.Info(u.env+" is unset: "+u.name+"'s routes answer 404", "upstream", u.name)
		}
	}

	if cfg.RedisURL != "" {
		rdb, err := NewRedisClient(cfg.RedisURL)
		if err != nil {
			return fmt.Errorf("REDIS_URL: %w", err)
		}
		defer rdb.Close()
		opts.Limiter = ratelimit.NewRedis(rdb, cfg.RateLimit, cfg.RedisKeyPrefix+"ratelimit:", logger)
		opts.Sessions = session.New(rdb, cfg.RedisKeyPrefix)
		opts.RedisPing = func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
	} else {
		opts.Limiter = ratelimit.NewLocal(cfg.RateLimit)
	}

	g := gateway.New(opts)
	logger.Info("gateway configured", "identity_url", cfg.IdentityURL, "box_url", cfg.BoxURL,
		"courier_url", cfg.CourierURL, "keyholder_url", cfg.KeyholderURL, "parlor_url", cfg.ParlorURL,
		"issuer", cfg.IdentityIssuer, "jwks_ttl_ms", cfg.JWKSTTL.Milliseconds(), "redis", cfg.RedisURL != "",
		"browser_sessions", g.BrowserSessions(), "trusted_proxies", cfg.TrustedProxies, "rate_limit_per_minute", cfg.RateLimit)
	return serve(ctx, ln, metrics.Middleware(tracing.Middleware(g)), logger)
}

// serve is httpx.Serve with the server's header limit raised above the
// gateway's own (gateway.MaxHeaderBytes), so that an oversized header is
// answered by the gateway in the route's envelope rather than by the
// server in text/plain.
func serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := httpx.NewServer(h, logger)
	srv.MaxHeaderBytes = gateway.ServerMaxHeaderBytes
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "addr", ln.Addr().String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), httpx.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
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

// Run runs `platform gateway serve`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("gateway: missing subcommand (serve)")
	}
	switch args[0] {
	case "serve":
		fs := cli.FlagSet("gateway serve", env.Stderr)
		if err := cli.Parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return cli.Usagef("gateway serve: unexpected argument %q", fs.Arg(0))
		}
		cfg, err := LoadConfig(env.Getenv)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
		if err != nil {
			return fmt.Errorf("PORT: cannot listen on %d: %w", cfg.Port, err)
		}
		logger := env.Logger("gateway")
		if cfg.RedisURL != "" {
			// The client's logger is process-wide; only the process's own
			// entry point sets it, so tests of Serve see no global change.
			redis.SetLogger(redisLogger{log: logger})
		}
		return Serve(ctx, cfg, logger, ln)
	default:
		return cli.Usagef("gateway: unknown subcommand %q", args[0])
	}
}
