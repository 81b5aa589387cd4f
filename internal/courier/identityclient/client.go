// Package identityclient is courier's side of identity: a user's token is
// verified against identity's key set as the gateway verifies it
// (IDENTITY_ISSUER, its /.well-known/jwks.json, through internal/tokens),
// then identity's own client (internal/identity/client) asks who the user
// is (GET /v1/me, for the address their preferences follow) and, for
// webhook endpoints, what role they hold in an account (GET
// /v1/accounts/{id}). Every failure maps to courier's codes in one place
// (Errors): a bad token is CodeUnauthorized without asking identity, and
// anything that cannot be trusted is CodeUnavailable. The token is never
// logged.
package identityclient

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity/client"
	"github.com/platformco/platform/internal/tokens"
)

// Options configure the client.
type Options struct {
	// Issuer is IDENTITY_ISSUER, the expected iss; JWKSURL defaults to
	// Issuer + /.well-known/jwks.json.
	Issuer, JWKSURL string
	// BaseURL is COURIER_IDENTITY_URL.
	BaseURL string
	// Timeout bounds each round trip (default 2s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Errors are courier's answers for identity's client.
var Errors = client.Errors{
	Unauthenticated: errs.New(courier.CodeUnauthorized, "a valid identity access token is required"),
	Forbidden:       errs.New(courier.CodeForbidden, "platform staff only"),
	NotFound:        errs.New(courier.CodeNotFound, "no such account"),
	Unavailable:     errs.New(courier.CodeUnavailable, "the identity service is unavailable; try again shortly"),
}

// Client implements courier's httpapi.Identity.
type Client struct {
	keys     *tokens.Cache
	verifier *tokens.Verifier
	identity *client.Client
	logger   *slog.Logger
}

// New returns a client; Run must run for tokens to verify. With no
// Issuer or no BaseURL every check answers unavailable.
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
	c := &Client{logger: o.Logger}
	if o.BaseURL != "" {
		c.identity = client.New(client.Options{BaseURL: o.BaseURL, Timeout: o.Timeout, Errors: Errors, Logger: o.Logger})
	}
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

func copyOf(e *errs.Error) error {
	cp := *e
	return &cp
}

func (c *Client) unavailable(ctx context.Context, call, class string, attrs ...any) error {
	c.logger.WarnContext(ctx, "identity check failed closed",
		append([]any{"call", call, "class", class}, attrs...)...)
	return copyOf(Errors.Unavailable)
}

// verify checks token's signature, issuer and expiry against the key set.
func (c *Client) verify(ctx context.Context, call, token string) (string, error) {
	if token == "" {
		return "", copyOf(Errors.Unauthenticated)
	}
	if c.verifier == nil || c.identity == nil {
		return "", c.unavailable(ctx, call, "not_configured")
	}
	claims, err := c.verifier.Verify(ctx, token)
	if err != nil {
		if errs.Code(err) == tokens.CodeInvalidToken {
			return "", copyOf(Errors.Unauthenticated)
		}
		return "", c.unavailable(ctx, call, "key_set", "err", err.Error())
	}
	return claims.Subject, nil
}

// User returns the verified token's user, whose id
// must be the token's subject and who must have an address.
func (c *Client) User(ctx context.Context, token string) (courier.User, error) {
	const call = "me"
	sub, err := c.verify(ctx, call, token)
	if err != nil {
		return courier.User{}, err
	}
	me, err := c.identity.Me(ctx, token)
	if err != nil {
		return courier.User{}, err
	}
	if me.Email == "" {
		return courier.User{}, c.unavailable(ctx, call, "malformed_body")
	}
	if !strings.EqualFold(me.ID, sub) {
		return courier.User{}, c.unavailable(ctx, call, "subject_mismatch")
	}
	return courier.User{ID: me.ID, Email: me.Email}, nil
}

// AccountRole returns the caller's role in accountID, asked of identity
// as box asks (operations.md section 4): 404 → CodeNotFound, 401 →
// CodeUnauthorized, anything else → CodeUnavailable.
func (c *Client) AccountRole(ctx context.Context, token, accountID string) (string, error) {
	const call = "account"
	if _, err := c.verify(ctx, call, token); err != nil {
		return "", err
	}
	role, _, err := c.identity.AccountRole(ctx, token, accountID)
	return role, err
}

// Close releases idle connections.
func (c *Client) Close() {
	if c.identity != nil {
		c.identity.Close()
	}
}
