package parlor

import (
	"context"
	"net/url"
	"time"
)

// The shapes and calls of courier (preferences, webhooks) and keyholder
// (the exchange, pulls), as the gateway routes them.

// Preferences are the signed-in user's notification categories.
type Preferences struct {
	ProductUpdates       bool `json:"product_updates"`
	ReleaseAnnouncements bool `json:"release_announcements"`
	AccountActivity      bool `json:"account_activity"`
}

// WebhookEndpoint is an account's subscribed URL.
type WebhookEndpoint struct {
	ID             string    `json:"id"`
	AccountID      string    `json:"account_id"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"event_types"`
	Description    string    `json:"description"`
	Disabled       bool      `json:"disabled"`
	DisabledReason string    `json:"disabled_reason"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	LatencyMS  int64     `json:"latency_ms"`
	Response   string    `json:"response"`
	Error      string    `json:"error"`
}

// Delivery is one event delivered (or being delivered) to an endpoint.
type Delivery struct {
	ID            string            `json:"id"`
	EventID       string            `json:"event_id"`
	EventType     string            `json:"event_type"`
	Status        string            `json:"status"`
	Attempts      []DeliveryAttempt `json:"attempts"`
	NextAttemptAt *time.Time        `json:"next_attempt_at"`
	CreatedAt     time.Time         `json:"created_at"`
}

// RegistryCredential is keyholder's pull-only credential; Password is
// shown once.
type RegistryCredential struct {
	Username     string    `json:"username"`
	Password     string    `json:"password"`
	Registry     string    `json:"registry"`
	Repository   string    `json:"repository"`
	VersionRange *string   `json:"version_range"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// Pull is one manifest pulled by tag with an account's credential.
type Pull struct {
	ID         int64     `json:"id"`
	Credential string    `json:"credential"`
	Repository string    `json:"repository"`
	Tag        string    `json:"tag"`
	Digest     string    `json:"digest"`
	PulledAt   time.Time `json:"pulled_at"`
}

// Preferences reads the signed-in user's notification preferences.
func (c *Client) Preferences(ctx context.Context, token string) (Preferences, error) {
	var out struct {
		Preferences Preferences `json:"preferences"`
	}
	err := c.do(ctx, token, "GET", "/v1/me/preferences", nil, &out)
	return out.Preferences, err
}

// UpdatePreferences sets every category at once.
func (c *Client) UpdatePreferences(ctx context.Context, token string, p Preferences) (Preferences, error) {
	var out struct {
		Preferences Preferences `json:"preferences"`
	}
	err := c.do(ctx, token, "PATCH", "/v1/me/preferences", p, &out)
	return out.Preferences, err
}

func endpointsPath(id string) string {
	return "/v1/accounts/" + url.PathEscape(id) + "/webhook_endpoints"
}

func endpointPath(id, eid string) string { return endpointsPath(id) + "/" + url.PathEscape(eid) }

// WebhookEndpoints lists an account's endpoints, oldest first.
func (c *Client) WebhookEndpoints(ctx context.Context, token, id string) ([]WebhookEndpoint, error) {
	var out struct {
		Endpoints []WebhookEndpoint `json:"endpoints"`
	}
	err := c.do(ctx, token, "GET", endpointsPath(id), nil, &out)
	return out.Endpoints, err
}

// WebhookEndpoint reads one endpoint.
func (c *Client) WebhookEndpoint(ctx context.Context, token, id, eid string) (WebhookEndpoint, error) {
	var out struct {
		Endpoint WebhookEndpoint `json:"endpoint"`
	}
	err := c.do(ctx, token, "GET", endpointPath(id, eid), nil, &out)
	return out.Endpoint, err
}

// CreateWebhookEndpoint subscribes rawURL to eventTypes; the signing
// secret is in this answer only.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, token, id, rawURL string, eventTypes []string, description string) (WebhookEndpoint, string, error) {
	body := map[string]any{"url": rawURL, "event_types": eventTypes}
	if description != "" {
		body["description"] = description
	}
	var out struct {
		Endpoint WebhookEndpoint `json:"endpoint"`
		Secret   string          `json:"secret"`
	}
	err := c.do(ctx, token, "POST", endpointsPath(id), body, &out)
	return out.Endpoint, out.Secret, err
}

// SetWebhookDisabled disables or re-enables an endpoint.
func (c *Client) SetWebhookDisabled(ctx context.Context, token, id, eid string, disabled bool) error {
	return c.do(ctx, token, "PATCH", endpointPath(id, eid), map[string]bool{"disabled": disabled}, nil)
}

// DeleteWebhookEndpoint removes an endpoint and its delivery log.
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, token, id, eid string) error {
	return c.do(ctx, token, "DELETE", endpointPath(id, eid), nil, nil)
}

// RotateWebhookSecret replaces an endpoint's signing secret; the new one
// is in this answer only.
func (c *Client) RotateWebhookSecret(ctx context.Context, token, id, eid string) (WebhookEndpoint, string, error) {
	var out struct {
		Endpoint WebhookEndpoint `json:"endpoint"`
		Secret   string          `json:"secret"`
	}
	err := c.do(ctx, token, "POST", endpointPath(id, eid)+"/rotate_secret", nil, &out)
	return out.Endpoint, out.Secret, err
}

// WebhookDeliveries reads one page of an endpoint's delivery log, newest
// first, and the cursor of the next page ("" at the end).
func (c *Client) WebhookDeliveries(ctx context.Context, token, id, eid, cursor string) ([]Delivery, string, error) {
	q := url.Values{"limit": {"50"}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out struct {
		Deliveries []Delivery `json:"deliveries"`
		NextCursor *string    `json:"next_cursor"`
	}
	err := c.do(ctx, token, "GET", endpointPath(id, eid)+"/deliveries?"+q.Encode(), nil, &out)
	next := ""
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Deliveries, next, err
}

// RetryDelivery makes a delivery due again at once.
func (c *Client) RetryDelivery(ctx context.Context, token, id, eid, did string) error {
	return c.do(ctx, token, "POST", endpointPath(id, eid)+"/deliveries/"+url.PathEscape(did)+"/retry", nil, nil)
}

// Exchange trades a capability for a registry credential at keyholder.
// The capability is the credential here, so no session token is sent.
func (c *Client) Exchange(ctx context.Context, capability string) (RegistryCredential, error) {
	var out struct {
		Credential RegistryCredential `json:"credential"`
	}
	err := c.do(ctx, "", "POST", "/v1/exchange", map[string]string{"capability": capability}, &out)
	return out.Credential, err
}

// PullPage is one page of an account's pulls, newest first; Next is the
// cursor of the older page, empty on the last.
type PullPage struct {
	Pulls []Pull
	Next  string
}

// Pulls reads a page of an account's pulls: the newest, or with cursor
// the page after the one that gave it.
func (c *Client) Pulls(ctx context.Context, token, id, cursor string) (PullPage, error) {
	return c.pullPage(ctx, token, "/v1/accounts/"+url.PathEscape(id)+"/pulls", cursor)
}

func (c *Client) pullPage(ctx context.Context, token, path, cursor string) (PullPage, error) {
	path += cursorQuery(cursor)
	var out struct {
		Pulls      []Pull  `json:"pulls"`
		NextCursor *string `json:"next_cursor"`
	}
	err := c.do(ctx, token, "GET", path, nil, &out)
	return PullPage{Pulls: out.Pulls, Next: deref(out.NextCursor)}, err
}
