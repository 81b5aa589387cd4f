// Package keyset is darkroom's side of identity (darkroom.md section 1):
// a user's token is verified locally against identity's key set
// (IDENTITY_ISSUER, its /.well-known/jwks.json, through internal/tokens),
// and nothing else is asked of identity. A bad token is unauthenticated;
// a key set that cannot be trusted is unavailable (503). The token is
// never logged.
package keyset

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/tokens"
)

// Options configure a Verifier.
type Options struct {
	// Issuer is IDENTITY_ISSUER, the expected iss; JWKSURL defaults to
	// Issuer + /.well-known/jwks.json.
	Issuer, JWKSURL string
	// Timeout bounds each key set fetch (default 2s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Verifier implements darkroom.Identity.
type Verifier struct {
	keys     *tokens.Cache
	verifier *tokens.Verifier
	logger   *slog.Logger
}

var _ darkroom.Identity = (*Verifier)(nil)

// New returns a verifier; Run must run for tokens to verify. With no
// Issuer no token verifies (unavailable).
func New(o Options) *Verifier {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.JWKSURL == "" && o.Issuer != "" {
		o.JWKSURL = strings.TrimRight(o.Issuer, "/") + "/.well-known/jwks.json"
	}
	v := &Verifier{logger: o.Logger}
	if o.Issuer != "" {
		v.keys = tokens.New(tokens.Options{URL: o.JWKSURL, TTL: 5 * time.Minute, FetchTimeout: o.Timeout, Logger: o.Logger})
		v.verifier = tokens.NewVerifier(v.keys, o.Issuer)
	}
	return v
}

// Run keeps the key set fresh until ctx is done.
func (v *Verifier) Run(ctx context.Context) {
	if v.keys != nil {
		v.keys.Run(ctx)
	}
}

// Usable reports whether the key set is loaded and fresh.
func (v *Verifier) Usable() bool { return v.keys != nil && v.keys.Status(time.Now()).Usable }

// User implements darkroom.Identity: the verified token's subject.
func (v *Verifier) User(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", errs.New(darkroom.CodeUnauthenticated, darkroom.MsgUnauthenticated)
	}
	if v.verifier == nil {
		v.logger.WarnContext(ctx, "token check failed closed", "class", "not_configured")
		return "", errs.New(darkroom.CodeUnavailable, "IDENTITY_ISSUER is not set: no token can be verified")
	}
	claims, err := v.verifier.Verify(ctx, token)
	if err != nil {
		if errs.Code(err) == tokens.CodeInvalidToken {
			return "", errs.New(darkroom.CodeUnauthenticated, darkroom.MsgUnauthenticated)
		}
		v.logger.WarnContext(ctx, "token check failed closed", "class", "key_set", "err", err.Error())
		return "", errs.New(darkroom.CodeUnavailable, "identity's key set is unavailable; try again shortly")
	}
	return claims.Subject, nil
}
