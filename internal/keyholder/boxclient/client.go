// Package boxclient is keyholder's HTTP client of box: redeeming a
// capability (POST /v1/capabilities/redeem) and box's readiness. It never
// follows a redirect, caps what it reads and fails closed: box's own
// refusals (404, 410) pass on with box's codes, every other answer it
// cannot trust is "unavailable". The capability is never logged.
package boxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/observe"
)

// maxBody caps a box response body.
const maxBody = 64 << 10

// DefaultTimeout bounds one round trip.
const DefaultTimeout = 5 * time.Second

// Client implements keyholder.Box.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
	logger  *slog.Logger
}

var _ keyholder.Box = (*Client)(nil)

// New returns a client of box at baseURL.
func New(baseURL string, timeout time.Duration, logger *slog.Logger) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{
		base:    strings.TrimRight(baseURL, "/"),
		timeout: timeout,
		http: &http.Client{
			Transport:     observe.Transport(http.DefaultTransport.(*http.Transport).Clone()),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		logger: logger,
	}
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) unavailable(ctx context.Context, class string, attrs ...any) error {
	attrs = append([]any{"call", "redeem", "class", class, "trace_id", httpx.TraceFrom(ctx).TraceID}, attrs...)
	c.logger.WarnContext(ctx, "box call failed closed", attrs...)
	return errs.New(keyholder.CodeUnavailable, "entitlement service unavailable")
}

// Redeem implements keyholder.Box.
func (c *Client) Redeem(ctx context.Context, capability string) (keyholder.Redemption, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"token": capability})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/capabilities/redeem", bytes.NewReader(body))
	if err != nil {
		return keyholder.Redemption{}, c.unavailable(ctx, "bad_request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	resp, err := c.http.Do(req)
	if err != nil {
		return keyholder.Redemption{}, c.unavailable(ctx, "transport", "error", redact(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil || len(raw) > maxBody {
		return keyholder.Redemption{}, c.unavailable(ctx, "read", "status", resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var out struct {
			AccountID    string  `json:"account_id"`
			Artifact     string  `json:"artifact"`
			VersionRange *string `json:"version_range"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.AccountID == "" || out.Artifact == "" {
			return keyholder.Redemption{}, c.unavailable(ctx, "malformed_body")
		}
		return keyholder.Redemption{AccountID: out.AccountID, Artifact: out.Artifact, VersionRange: out.VersionRange}, nil
	case http.StatusNotFound, http.StatusGone:
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		switch e.Error.Code {
		case keyholder.CodeNotFound, keyholder.CodeCapabilityUsed, keyholder.CodeCapabilityExpired:
			return keyholder.Redemption{}, errs.New(e.Error.Code, e.Error.Message)
		}
		if resp.StatusCode == http.StatusNotFound {
			return keyholder.Redemption{}, errs.New(keyholder.CodeNotFound, "capability not found")
		}
		return keyholder.Redemption{}, errs.New(keyholder.CodeCapabilityUsed, "capability already used")
	default:
		return keyholder.Redemption{}, c.unavailable(ctx, "unexpected_status", "status", resp.StatusCode)
	}
}

// Ready reports whether box's readiness probe answers 200.
func (c *Client) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return errors.New(redact(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode != http.StatusOK {
		return errors.New("box readiness: " + resp.Status)
	}
	return nil
}

// redact drops the request URL that *url.Error carries: an operator's base
// URL may hold credentials.
func redact(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Op + ": " + uerr.Err.Error()
	}
	return err.Error()
}
