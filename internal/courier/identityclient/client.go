// Package identityclient is courier's client of the identity service. A
// user's token is verified against identity's key set as the gateway
// verifies it (IDENTITY_ISSUER, its /.well-known/jwks.json), then
// identity is asked who the user is (GET /v1/me, for the address their
// preferences follow) and, for webhook endpoints, what role they hold in
// an account (GET /v1/accounts/{id}), forwarding the caller's token as box
// does. It never follows a redirect, caps what it reads and fails closed:
// every answer it cannot trust is CodeUnavailable. The token is never logged.
package identityclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/gateway"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/tokens"
)

const maxBody = 64 << 10

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

// Client implements courier.Identity.
type Client struct {
	keys     *tokens.Cache
	verifier *tokens.Verifier
	base     string
	timeout  time.Duration
	http     *http.Client
	logger   *slog.Logger
}

var _ courier.Identity = (*Client)(nil)

// New returns a client; Run must run for tokens to verify. With no
// Issuer or no BaseURL every check answers unavailable.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.JWKSURL == "" && o.Issuer != "" {
		o.JWKSURL = strings.TrimRight(o.Issuer, "/") + "/.well-known/jwks.json"
	}
	c := &Client{base: strings.TrimRight(o.BaseURL, "/"), timeout: o.Timeout, logger: o.Logger,
		http: &http.Client{
			Transport: &http.Transport{
				DialContext:           (&net.Dialer{Timeout: o.Timeout}).DialContext,
				TLSHandshakeTimeout:   o.Timeout,
				ResponseHeaderTimeout: o.Timeout,
				MaxIdleConnsPerHost:   32,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
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

func unauthorized() error {
	return errs.New(courier.CodeUnauthorized, "a valid identity access token is required")
}

func (c *Client) unavailable(ctx context.Context, call, class string, attrs ...any) error {
	c.logger.WarnContext(ctx, "identity check failed closed",
		append([]any{"call", call, "class", class}, attrs...)...)
	return errs.New(courier.CodeUnavailable, "the identity service is unavailable; try again shortly")
}

// verify checks token's signature, issuer and expiry against the key set.
func (c *Client) verify(ctx context.Context, call, token string) (string, error) {
	if token == "" {
		return "", unauthorized()
	}
	if c.verifier == nil || c.base == "" {
		return "", c.unavailable(ctx, call, "not_configured")
	}
	claims, err := c.verifier.Verify(ctx, token)
	if err != nil {
		if errs.Code(err) == gateway.CodeInvalidToken {
			return "", unauthorized()
		}
		return "", c.unavailable(ctx, call, "key_set", "error", err.Error())
	}
	return claims.Subject, nil
}

func (c *Client) get(ctx context.Context, call, path, token string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, nil, c.unavailable(ctx, call, "bad_request")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	res, err := c.http.Do(req)
	if err != nil {
		class := "transport"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return 0, nil, c.unavailable(ctx, call, class, "error", err.Error())
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		return 0, nil, c.unavailable(ctx, call, "read", "status", res.StatusCode)
	}
	return res.StatusCode, body, nil
}

func decode(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// User implements courier.Identity.
func (c *Client) User(ctx context.Context, token string) (courier.User, error) {
	const call = "me"
	sub, err := c.verify(ctx, call, token)
	if err != nil {
		return courier.User{}, err
	}
	status, body, err := c.get(ctx, call, "/v1/me", token)
	if err != nil {
		return courier.User{}, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return courier.User{}, unauthorized()
	default:
		return courier.User{}, c.unavailable(ctx, call, "unexpected_status", "status", status)
	}
	var me struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	if err := decode(body, &me); err != nil || me.ID == "" || me.Email == "" {
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
	status, body, err := c.get(ctx, call, "/v1/accounts/"+url.PathEscape(accountID), token)
	if err != nil {
		return "", err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", unauthorized()
	case http.StatusNotFound:
		return "", errs.New(courier.CodeNotFound, "no such account")
	default:
		return "", c.unavailable(ctx, call, "unexpected_status", "status", status)
	}
	var acct struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}
	if err := decode(body, &acct); err != nil || strings.TrimSpace(acct.Role) == "" {
		return "", c.unavailable(ctx, call, "malformed_body")
	}
	if !strings.EqualFold(acct.ID, accountID) {
		return "", c.unavailable(ctx, call, "account_mismatch")
	}
	return acct.Role, nil
}
