// Package client is the one client of identity's API that other services
// use: who a bearer credential belongs to (GET /v1/me), whether it is
// platform staff (GET /v1/operator/me), whether it may publish a release
// (GET /v1/operator/publisher), and the caller's role in an
// account, with an API key's scopes (GET /v1/accounts/{id}). Identity owns
// it, so its contract and its failure mapping live in one place.
//
// It forwards the caller's credential and trace context, never follows a
// redirect, caps what it reads, and fails closed: every answer it cannot
// trust (not configured, transport error, timeout, redirect, unexpected
// status, malformed or oversized body, an answer about another account) is
// the caller's Unavailable error, a 503. The failure class is logged; the
// credential never is. A caller passes its own envelope's errors in
// Options.Errors, so the answers come back in that service's codes.
package client

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

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

// MaxBodyBytes caps an identity response body; a larger one is malformed.
const MaxBodyBytes = 64 << 10

// DefaultTimeout bounds one round trip when none is configured.
const DefaultTimeout = 2 * time.Second

// Errors are the calling service's answers for the client's four outcomes,
// in that service's codes and words.
type Errors struct {
	// Unauthenticated: identity refused the credential (401), or there is
	// none.
	Unauthenticated *errs.Error
	// Forbidden: the caller is not platform staff.
	Forbidden *errs.Error
	// NotFound: no such account, or the caller is not a member of it.
	NotFound *errs.Error
	// Unavailable: anything the client cannot trust; answered 503.
	Unavailable *errs.Error
}

// Options configure a Client.
type Options struct {
	// BaseURL is identity's base address; empty makes every call answer
	// Unavailable.
	BaseURL string
	// Timeout bounds each round trip (DefaultTimeout when zero).
	Timeout time.Duration
	// Errors are the service's answers; required.
	Errors Errors
	Logger *slog.Logger
}

// Client is safe for concurrent use.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
	errors  Errors
	logger  *slog.Logger
}

// User is the caller as identity's /v1/me answers it.
type User struct {
	ID    string
	Email string
}

// New returns a client of identity.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// Every request of a calling service makes one identity call, so the
	// idle pool must cover the caller's peak concurrency: past
	// MaxIdleConnsPerHost a finished call closes its connection and the
	// next one dials again. With 64, 128 concurrent artifact checks at box
	// fell below the rate of 32.
	transport := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Client{
		base:    strings.TrimRight(o.BaseURL, "/"),
		timeout: o.Timeout,
		http: &http.Client{
			Transport: observe.Transport(transport),
			// A redirect is an answer no caller expects from identity: it
			// is returned as is and classed as a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		errors: o.Errors,
		logger: o.Logger,
	}
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// answer returns a copy of e, so a caller that sets RetryAfter or Fields
// never changes the template.
func answer(e *errs.Error) error {
	cp := *e
	return &cp
}

// failure logs why a round trip cannot be trusted and answers Unavailable.
func (c *Client) failure(ctx context.Context, call, class string, attrs ...any) error {
	attrs = append([]any{"call", call, "class", class}, attrs...)
	c.logger.WarnContext(ctx, "identity check failed closed", attrs...)
	return answer(c.errors.Unavailable)
}

// get performs one round trip and returns the status and the (capped) body.
// A non-nil error is already the caller's answer, logged when it is a
// failure.
func (c *Client) get(ctx context.Context, call, path, token string) (int, []byte, error) {
	if token == "" {
		return 0, nil, answer(c.errors.Unauthenticated)
	}
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

// unexpected fails closed on a status the call does not expect. A
// redirect gets its own class: it usually means the identity URL points at
// the wrong place (http instead of https, a login page).
func (c *Client) unexpected(ctx context.Context, call string, status int) error {
	class := "unexpected_status"
	if status >= 300 && status < 400 {
		class = "redirect"
	}
	return c.failure(ctx, call, class, "status", status)
}

// decode reads one JSON object body; anything else is malformed.
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

// OperatorMe returns the caller's user id when the caller is platform
// staff (entitlements.md section 5, row by row). Errors: Unauthenticated
// (401), Forbidden (403, 404, or staff false), Unavailable.
func (c *Client) OperatorMe(ctx context.Context, token string) (string, error) {
	const call = "operator_me"
	var me struct {
		User *struct {
			ID    *string `json:"id"`
			Staff *bool   `json:"staff"`
		} `json:"user"`
	}
	if err := c.staffRead(ctx, call, "/v1/operator/me", token, &me); err != nil {
		return "", err
	}
	if me.User == nil || me.User.ID == nil || strings.TrimSpace(*me.User.ID) == "" {
		return "", c.failure(ctx, call, "empty_user_id")
	}
	if me.User.Staff == nil || !*me.User.Staff {
		return "", answer(c.errors.Forbidden)
	}
	return *me.User.ID, nil
}

// staffRead GETs one of identity's staff answers into dst: 401 is
// Unauthenticated, 403 and 404 Forbidden, anything else but a well-formed
// 200 Unavailable.
func (c *Client) staffRead(ctx context.Context, call, path, token string, dst any) error {
	status, body, err := c.get(ctx, call, path, token)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return answer(c.errors.Unauthenticated)
	case http.StatusForbidden, http.StatusNotFound:
		return answer(c.errors.Forbidden)
	default:
		return c.unexpected(ctx, call, status)
	}
	if err := decode(body, dst); err != nil {
		return c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	return nil
}

// Publisher returns the staff member on whose authority the caller may
// publish a release: a staff session's user, or a live releases:publish
// key's creator (decision 0025). It is the only check that
// admits such a key; OperatorMe refuses every key. Errors:
// Unauthenticated (401), Forbidden (403, 404), Unavailable.
func (c *Client) Publisher(ctx context.Context, token string) (string, error) {
	const call = "publisher"
	var pub struct {
		UserID *string `json:"user_id"`
	}
	if err := c.staffRead(ctx, call, "/v1/operator/publisher", token, &pub); err != nil {
		return "", err
	}
	if pub.UserID == nil || strings.TrimSpace(*pub.UserID) == "" {
		return "", c.failure(ctx, call, "empty_user_id")
	}
	return *pub.UserID, nil
}

// AccountRole returns the caller's role in accountID and, for an API key
// (role "api_key"), the key's scopes. Errors: Unauthenticated, NotFound
// (identity's 404: a non-member or an unknown account), Unavailable (any
// other status, identity's 403 included, and an answer about another
// account).
func (c *Client) AccountRole(ctx context.Context, token, accountID string) (string, []string, error) {
	const call = "account"
	status, body, err := c.get(ctx, call, "/v1/accounts/"+url.PathEscape(accountID), token)
	if err != nil {
		return "", nil, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", nil, answer(c.errors.Unauthenticated)
	case http.StatusNotFound:
		return "", nil, answer(c.errors.NotFound)
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

// Account is an account as its member reads it (GET /v1/accounts/{id}).
type Account struct {
	ID       string
	Name     string
	Role     string
	Personal bool
	Scopes   []string
}

// Account returns the caller's account: its role, its scopes and whether it
// is personal. Errors as AccountRole's.
func (c *Client) Account(ctx context.Context, token, accountID string) (Account, error) {
	const call = "account"
	status, body, err := c.get(ctx, call, "/v1/accounts/"+url.PathEscape(accountID), token)
	if err != nil {
		return Account{}, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return Account{}, answer(c.errors.Unauthenticated)
	case http.StatusNotFound:
		return Account{}, answer(c.errors.NotFound)
	default:
		return Account{}, c.unexpected(ctx, call, status)
	}
	var acct struct {
		ID       string   `json:"id"`
		Name     string   `json:"name"`
		Role     string   `json:"role"`
		Personal *bool    `json:"personal"`
		Scopes   []string `json:"scopes"`
	}
	if err := decode(body, &acct); err != nil {
		return Account{}, c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	if !strings.EqualFold(acct.ID, accountID) {
		return Account{}, c.failure(ctx, call, "account_mismatch")
	}
	if strings.TrimSpace(acct.Role) == "" || acct.Personal == nil {
		return Account{}, c.failure(ctx, call, "empty_role")
	}
	return Account{ID: acct.ID, Name: acct.Name, Role: acct.Role, Personal: *acct.Personal, Scopes: acct.Scopes}, nil
}

// Me returns the caller's user (Email empty when identity names none).
// Errors: Unauthenticated, Unavailable (an answer without an id included).
func (c *Client) Me(ctx context.Context, token string) (User, error) {
	const call = "me"
	status, body, err := c.get(ctx, call, "/v1/me", token)
	if err != nil {
		return User{}, err
	}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return User{}, answer(c.errors.Unauthenticated)
	default:
		return User{}, c.unexpected(ctx, call, status)
	}
	var me struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	if err := decode(body, &me); err != nil {
		return User{}, c.failure(ctx, call, "malformed_body", "err", err.Error())
	}
	if strings.TrimSpace(me.ID) == "" {
		return User{}, c.failure(ctx, call, "empty_user_id")
	}
	return User{ID: me.ID, Email: me.Email}, nil
}

// UserID is Me's id alone.
func (c *Client) UserID(ctx context.Context, token string) (string, error) {
	u, err := c.Me(ctx, token)
	return u.ID, err
}
