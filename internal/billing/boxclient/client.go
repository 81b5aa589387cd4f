// Package boxclient is billing's client of box's operator API: a grant
// (POST /v1/operator/entitlements) and a revoke (POST
// /v1/operator/entitlements/{id}/revoke), each with the staff caller's own
// token. It never follows a redirect, caps what it reads and fails
// closed: box's refusals pass on, anything it cannot trust is unavailable.
// The token is never logged.
package boxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

const maxBody = 64 << 10

// Client implements billing.Box.
type Client struct {
	base   string
	http   *http.Client
	logger *slog.Logger
}

var _ billing.Box = (*Client)(nil)

// New returns a client of box at baseURL; an empty one makes every call
// unavailable.
func New(baseURL string, timeout time.Duration, logger *slog.Logger) *Client {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), logger: logger, http: &http.Client{Timeout: timeout,
		Transport:     observe.Transport(http.DefaultTransport.(*http.Transport).Clone()),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) unavailable(ctx context.Context, call, class string, attrs ...any) error {
	c.logger.WarnContext(ctx, "box call failed closed", append([]any{"call", call, "class", class}, attrs...)...)
	return errs.New(billing.CodeUnavailable, "entitlement service unavailable: nothing was granted or revoked")
}

func (c *Client) post(ctx context.Context, call, path, token string, body any) (int, []byte, error) {
	if c.base == "" {
		return 0, nil, c.unavailable(ctx, call, "not_configured")
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, rd)
	if err != nil {
		return 0, nil, c.unavailable(ctx, call, "bad_request")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.unavailable(ctx, call, "transport")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil || len(raw) > maxBody {
		return 0, nil, c.unavailable(ctx, call, "read", "status", resp.StatusCode)
	}
	return resp.StatusCode, raw, nil
}

// refusal passes box's own refusals on in billing's codes.
func (c *Client) refusal(ctx context.Context, call string, status int, raw []byte) error {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	switch status {
	case http.StatusUnauthorized:
		return errs.New(billing.CodeUnauthenticated, "valid bearer token required")
	case http.StatusForbidden:
		return errs.New(billing.CodeForbidden, "platform staff only")
	case http.StatusNotFound:
		return errs.New(billing.CodeNotFound, "box has no such entitlement")
	case http.StatusUnprocessableEntity:
		return errs.New(billing.CodeValidation, "box refused the grant: "+e.Error.Message)
	}
	return c.unavailable(ctx, call, "unexpected_status", "status", status)
}

type entitlement struct {
	Entitlement *struct {
		ID        int64   `json:"id"`
		Reference *string `json:"reference"`
	} `json:"entitlement"`
}

// Grant implements billing.Box.
func (c *Client) Grant(ctx context.Context, token string, g billing.GrantSpec) (billing.GrantResult, error) {
	body := map[string]any{"account_id": g.AccountID, "product": g.Product, "source": billing.SourceReconciledPayment, "reference": g.Reference}
	if g.VersionRange != nil {
		body["version_range"] = *g.VersionRange
	}
	status, raw, err := c.post(ctx, "grant", "/v1/operator/entitlements", token, body)
	if err != nil {
		return billing.GrantResult{}, err
	}
	if status != http.StatusCreated && status != http.StatusConflict {
		return billing.GrantResult{}, c.refusal(ctx, "grant", status, raw)
	}
	var e entitlement
	if json.Unmarshal(raw, &e) != nil || e.Entitlement == nil || e.Entitlement.ID <= 0 {
		return billing.GrantResult{}, c.unavailable(ctx, "grant", "malformed_body", "status", status)
	}
	res := billing.GrantResult{EntitlementID: e.Entitlement.ID, Conflict: status == http.StatusConflict}
	if e.Entitlement.Reference != nil {
		res.Reference = *e.Entitlement.Reference
	}
	return res, nil
}

// Revoke implements billing.Box.
func (c *Client) Revoke(ctx context.Context, token string, id int64) error {
	status, raw, err := c.post(ctx, "revoke", "/v1/operator/entitlements/"+strconv.FormatInt(id, 10)+"/revoke", token, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return c.refusal(ctx, "revoke", status, raw)
	}
	return nil
}
