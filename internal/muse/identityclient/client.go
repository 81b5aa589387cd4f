// Package identityclient is muse's side of identity (muse.md section
// 1): a user's token is verified against identity's key set
// (IDENTITY_ISSUER, its /.well-known/jwks.json, through internal/tokens),
// as courier verifies it, and a writer's role in an account is asked of
// identity's API through identity's own client (GET /v1/accounts/{id}),
// as box asks. Every failure maps to muse's codes here: a bad token is
// unauthenticated without asking identity; anything that cannot be
// trusted is unavailable (503). The token is never logged.
package identityclient

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/tokens"
)

// Options configure the client.
type Options struct {
	// Issuer is IDENTITY_ISSUER, the expected iss; JWKSURL defaults to
	// Issuer + /.well-known/jwks.json.
	Issuer, JWKSURL string
	// BaseURL is MUSE_IDENTITY_URL.
	BaseURL string
	// Timeout bounds each round trip (default 2s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Errors are muse's answers for identity's client. Identity's 404 (not a
// member, or no such account) is a 403 here, as for pantry.
var Errors = client.Errors{
	Unauthenticated: errs.New(muse.CodeUnauthenticated, muse.MsgUnauthenticated),
	Forbidden:       errs.New(muse.CodeForbidden, "platform staff only"),
	NotFound:        errs.New(muse.CodeForbidden, "you are not a member of this account"),
	Unavailable:     errs.New(muse.CodeUnavailable, "the identity service is unavailable; try again shortly"),
}

// Client implements muse.Identity.
type Client struct {
	keys     *tokens.Cache
	verifier *tokens.Verifier
	identity *client.Client
	logger   *slog.Logger
}

var _ muse.Identity = (*Client)(nil)

// New returns a client; Run must run for tokens to verify. With no Issuer
// no token verifies (unavailable), and with no BaseURL no role is known
// (unavailable).
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.JWKSURL == "" && o.Issuer != "" {
		o.JWKSURL = strings.TrimRight(o.Issuer, "/") + "/.well-known/jwks.json"
	}
	c := &Client{logger: o.Logger,
		identity: client.New(client.Options{BaseURL: o.BaseURL, Timeout: o.Timeout, Errors: Errors, Logger: o.Logger})}
	if o.Issuer != "" {
		c.keys = tokens.New(tokens.Options{URL: o.JWKSURL, TTL: 5 * time.Minute, FetchTimeout: o.Timeout, Logger: o.Logger})
		c.verifier = tokens.NewVerifier(c.keys, o.Issuer)
	}
	return c
}

// Run keeps the key set fresh until ctx is done.
func (c *Client) Run(ctx context.Context) {
	if c.keys != nil {
		c.keys.Run(ctx)
	}
}

// KeysUsable reports whether the key set is loaded and fresh, so tokens
// can be verified now.
func (c *Client) KeysUsable() bool {
	return c.keys != nil && c.keys.Status(time.Now()).Usable
}

// Close releases idle connections.
func (c *Client) Close() { c.identity.Close() }

func copyOf(e *errs.Error) error {
	cp := *e
	return &cp
}

// User implements muse.Identity: the verified token's subject.
func (c *Client) User(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", copyOf(Errors.Unauthenticated)
	}
	if c.verifier == nil {
		c.logger.WarnContext(ctx, "identity check failed closed", "call", "verify", "class", "not_configured")
		return "", copyOf(Errors.Unavailable)
	}
	claims, err := c.verifier.Verify(ctx, token)
	if err != nil {
		if errs.Code(err) == tokens.CodeInvalidToken {
			return "", copyOf(Errors.Unauthenticated)
		}
		c.logger.WarnContext(ctx, "identity check failed closed", "call", "verify", "class", "key_set", "err", err.Error())
		return "", copyOf(Errors.Unavailable)
	}
	return claims.Subject, nil
}

// AccountRole implements muse.Identity (identity's client).
func (c *Client) AccountRole(ctx context.Context, token, accountID string) (string, []string, error) {
	return c.identity.AccountRole(ctx, token, accountID)
}

// Staff implements muse.Identity: the staff user's id (identity's GET
// /v1/operator/me).
func (c *Client) Staff(ctx context.Context, token string) (string, error) {
	return c.identity.OperatorMe(ctx, token)
}
