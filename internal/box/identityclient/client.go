// Package identityclient is box's HTTP client of the identity service: the
// staff check (GET /v1/operator/me), the membership check (GET
// /v1/accounts/{id}) and the caller's user id (GET /v1/me). It forwards the
// caller's bearer token and trace context, never follows a redirect, caps
// what it reads, and fails closed: every answer it cannot trust is
// "unavailable". The failure class is logged; the token never is.
package identityclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

// MaxBodyBytes caps an identity response body; a larger one is malformed.
const MaxBodyBytes = 64 << 10

// DefaultTimeout bounds one round trip when none is configured.
const DefaultTimeout = 2 * time.Second

// Client implements box.Identity over HTTP.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
	logger  *slog.Logger
}

var _ box.Identity = (*Client)(nil)

// New returns a client of the identity service at baseURL (no trailing
// slash needed). An empty baseURL is allowed and makes every check answer
// unavailable. timeout bounds each round trip (DefaultTimeout when zero).
func New(baseURL string, timeout time.Duration, logger *slog.Logger) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// Every box request makes one identity call, so the idle pool must
	// cover box's peak concurrency: past MaxIdleConnsPerHost a finished
	// call closes its connection and the next one dials again. With 64,
	// 128 concurrent artifact checks fell below the rate of 32.
	transport := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Client{
		base:    strings.TrimRight(baseURL, "/"),
		timeout: timeout,
		http: &http.Client{
			Transport: observe.Transport(transport),
			// A redirect is an answer box does not expect from identity:
			// it is returned as is and classed as a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		logger: logger,
	}
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func unavailable() error     { return errs.New(box.CodeUnavailable, box.MsgUnavailable) }
func unauthenticated() error { return errs.New(box.CodeUnauthenticated, box.MsgUnauthenticated) }

// failure logs why a round trip cannot be trusted and answers unavailable.
func (c *Client) failure(ctx context.Context, call, class string, attrs ...any) error {
	attrs = append([]any{"call", call, "class", class}, attrs...)
	c.logger.WarnContext(ctx, "identity check failed closed", attrs...)
	return unavailable()
}

// get performs one round trip and returns the status and the (capped) body.
// A non-nil error is already the unavailable answer, logged.
func (c *Client) get(ctx context.Context, call, path, token string) (int, []byte, error) {
	if c.base == "" {
		return 0, nil, c.failure(ctx, call, "not_configured")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, nil, c.failure(ctx, call, "bad_request", "err", err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	resp, err := c.http.Do(req)
	if err != nil {
		class := "transport"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		} else if errors.Is(err, context.Canceled) {
			class = "canceled"
		}
		return 0, nil, c.failure(ctx, call, class, "err", redact(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		class := "read"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		}
		return 0, nil, c.failure(ctx, call, class, "status", resp.StatusCode, "err", redact(err))
	}
	if len(body) > MaxBodyBytes {
		return 0, nil, c.failure(ctx, call, "body_too_large", "status", resp.StatusCode)
	}
	return resp.StatusCode, body, nil
}

// redact keeps the error's class and drops the request URL, which
// *url.Error carries (never a token, but an operator's base URL may hold
// credentials).
func redact(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Op + ": " + uerr.Err.Error()
	}
	return err.Error()
}

// unexpected fails closed on a status the check does not expect. A
// redirect gets its own class: it usually means BOX_IDENTITY_URL points at
// the wrong place (http instead of https, a login page).
func (c *Client) unexpected(ctx context.Context, call string, status int) error {
	class := "unexpected_status"
	if status >= 300 && status < 400 {
		class = "redirect"
	}
	return c.failure(ctx, call, class, "status", status)
}

// decode reads a JSON object body; anything else is malformed.
func decode(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}

// OperatorMe implements box.Identity: the staff check of entitlements.md
// section 5, row by row.
func (c *Client) OperatorMe(ctx context.Context, token string) (string, error) {
	const call = "operator_me"
	status, body, err := c.get(ctx, call, "/v1/operator/me", token)
	if err != nil {
		return "", err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", unauthenticated()
	case http.StatusForbidden, http.StatusNotFound:
		return "", errs.New(box.CodeForbidden, box.MsgForbidden)
	default:
		return "", c.unexpected(ctx, call, status)
	}
	var me struct {
		User *struct {
			ID    *string `json:"id"`
			Staff *bool   `json:"staff"`
		} `json:"user"`
	}
	if err := decode(body, &me); err != nil {
		return "", c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	if me.User == nil || me.User.ID == nil || strings.TrimSpace(*me.User.ID) == "" {
		return "", c.failure(ctx, call, "empty_user_id")
	}
	if me.User.Staff == nil || !*me.User.Staff {
		return "", errs.New(box.CodeForbidden, box.MsgForbidden)
	}
	return *me.User.ID, nil
}

// AccountRole implements box.Identity. Identity's 404 (non-member, unknown
// account) becomes box's 404; identity's 403 is unexpected here and fails
// closed like any other status.
func (c *Client) AccountRole(ctx context.Context, token, accountID string) (string, []string, error) {
	const call = "account"
	status, body, err := c.get(ctx, call, "/v1/accounts/"+url.PathEscape(accountID), token)
	if err != nil {
		return "", nil, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", nil, unauthenticated()
	case http.StatusNotFound:
		return "", nil, errs.New(box.CodeNotFound, box.MsgNotFound)
	default:
		return "", nil, c.unexpected(ctx, call, status)
	}
	var acct struct {
		ID     string   `json:"id"`
		Role   string   `json:"role"`
		Scopes []string `json:"scopes"`
	}
	if err := decode(body, &acct); err != nil {
		return "", nil, c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	if !strings.EqualFold(acct.ID, accountID) {
		return "", nil, c.failure(ctx, call, "account_mismatch")
	}
	if strings.TrimSpace(acct.Role) == "" {
		return "", nil, c.failure(ctx, call, "empty_role")
	}
	return acct.Role, acct.Scopes, nil
}

// Me implements box.Identity.
func (c *Client) Me(ctx context.Context, token string) (string, error) {
	const call = "me"
	status, body, err := c.get(ctx, call, "/v1/me", token)
	if err != nil {
		return "", err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", unauthenticated()
	default:
		return "", c.unexpected(ctx, call, status)
	}
	var me struct {
		ID string `json:"id"`
	}
	if err := decode(body, &me); err != nil {
		return "", c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	if strings.TrimSpace(me.ID) == "" {
		return "", c.failure(ctx, call, "empty_user_id")
	}
	return me.ID, nil
}
