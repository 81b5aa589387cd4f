// Package darkroomclient asks darkroom whether a media id is public, the
// one question pantry has for it (pantry.md section 2): an anonymous HEAD
// of GET /v1/media/{id} (darkroom.md section 3), which darkroom answers 200
// for public media and 404 for private or missing media alike. Anything
// else (not configured, transport error, timeout, redirect, another
// status) fails closed as pantry's unavailable (503).
package darkroomclient

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/pantry"
)

// Options configure a Client.
type Options struct {
	// BaseURL is PANTRY_DARKROOM_URL; empty answers every check
	// unavailable.
	BaseURL string
	// Timeout bounds each round trip (default 2s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Client implements pantry.Media.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
	logger  *slog.Logger
}

var _ pantry.Media = (*Client)(nil)

// New returns a client of darkroom.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{
		base:    strings.TrimRight(o.BaseURL, "/"),
		timeout: o.Timeout,
		http: &http.Client{
			Transport:     observe.Transport(http.DefaultTransport.(*http.Transport).Clone()),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		logger: o.Logger,
	}
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) unavailable(ctx context.Context, class string, attrs ...any) error {
	c.logger.WarnContext(ctx, "darkroom check failed closed", append([]any{"class", class}, attrs...)...)
	return errs.New(pantry.CodeUnavailable, "the media service is unavailable; try again shortly")
}

// Public implements pantry.Media.
func (c *Client) Public(ctx context.Context, id string) (bool, error) {
	if c.base == "" {
		return false, c.unavailable(ctx, "not_configured")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, c.base+"/v1/media/"+url.PathEscape(id), nil)
	if err != nil {
		return false, c.unavailable(ctx, "bad_request", "err", err.Error())
	}
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	resp, err := c.http.Do(req)
	if err != nil {
		class := "transport"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return false, c.unavailable(ctx, class, "err", err.Error())
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	default:
		return false, c.unavailable(ctx, "unexpected_status", "status", resp.StatusCode)
	}
}
