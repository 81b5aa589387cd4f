package parlor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/observe"
)

// Client speaks the platform's public API through the gateway with the
// signed-in user's session token. Parlor keeps no state of its own: every
// page is rendered from what these calls answer.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client of the gateway at base; every round trip is
// bounded by timeout.
func NewClient(base string, timeout time.Duration) *Client {
	return &Client{
		base: strings.TrimRight(base, "/"),
		http: &http.Client{
			Timeout: timeout,
			// Each call is a client span when tracing is on; its
			// traceparent then replaces the page's own (call).
			Transport: observe.Transport(http.DefaultTransport.(*http.Transport).Clone()),
			// The API never redirects; a redirect would be a misrouted
			// gateway, and following it could carry the token elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// APIError is an API's refusal in words a page can show: Message for the
// form as a whole, Fields for the inputs they concern.
type APIError struct {
	Status int
	Code   string
	// Message is the API's own sentence (problem+json detail, box's
	// message).
	Message string
	// Fields maps a request field to the rule codes it broke.
	Fields map[string]string
	// TraceID is the trace the API answered in (identity names it), which
	// is the page's own when the trace context was carried through.
	TraceID string
	// Challenge is the MFA challenge of a sign-in answered mfa_required.
	Challenge string
	// RetryAfter is when the API's Retry-After says to try again (a
	// locked sign-in's end); zero without the header.
	RetryAfter time.Time
	// Location is a redirect's target (a project's former slug answers
	// 301 to its current one).
	Location string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Unavailable reports whether err means the platform could not answer: a
// 503, a 5xx, or no answer at all.
func Unavailable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return err != nil
}

// StatusOf is the HTTP status of an API refusal, 0 for anything else.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// CodeOf is the error code of an API refusal, "" for anything else.
func CodeOf(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// do sends one request and decodes a 2xx JSON body into out (when not
// nil). Any other status becomes an *APIError read from either envelope:
// identity's problem+json or box's {error: {code, message}}. A 409 body
// is also decoded into conflict when given, for box's duplicate grant.
func (c *Client) do(ctx context.Context, token, method, path string, body, out any) error {
	return c.doConflict(ctx, token, method, path, body, out, nil)
}

// newRequest is a call of the platform's API with token ("" for none):
// body as JSON (or a rawBody as it is), the page's trace, and the
// browser's address and agent, which the gateway limits by.
func (c *Client) newRequest(ctx context.Context, token, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd, contentType = bytes.NewReader(b.data), b.contentType
	default:
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The page's trace continues through the gateway into the services.
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	// The gateway limits sign-ins per browser address, not per parlor.
	if chain, ok := ctx.Value(forwardedForKey{}).(string); ok {
		req.Header.Set("X-Forwarded-For", chain)
	}
	if ua, ok := ctx.Value(userAgentKey{}).(string); ok {
		req.Header.Set("User-Agent", ua)
	}
	return req, nil
}

// rawBody is a request body sent as it is (a file), not as JSON; as
// out, a 2xx answer's body is kept as it came (an image).
type rawBody struct {
	contentType string
	data        []byte
}

func (c *Client) doConflict(ctx context.Context, token, method, path string, body, out, conflict any) error {
	req, err := c.newRequest(ctx, token, method, path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("platform API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("platform API %s %s: read: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if o, ok := out.(*rawBody); ok {
			o.contentType, o.data = resp.Header.Get("Content-Type"), raw
			return nil
		}
		if out == nil || len(raw) == 0 {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("platform API %s %s: decode: %w", method, path, err)
		}
		return nil
	}
	if resp.StatusCode == http.StatusConflict && conflict != nil {
		_ = json.Unmarshal(raw, conflict)
	}
	e := decodeError(resp.StatusCode, raw)
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	e.Location = resp.Header.Get("Location")
	return e
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date,
// as the time it names; zero when absent or malformed.
func retryAfter(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return now.Add(time.Duration(secs) * time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return t
	}
	return time.Time{}
}

// decodeError reads either envelope. Box names its fields at the start of
// each comma-joined message ("product must be one of …"), so those become
// field errors too.
func decodeError(status int, raw []byte) *APIError {
	e := &APIError{Status: status, Fields: map[string]string{}}
	var env struct {
		Detail    string `json:"detail"`
		Code      string `json:"code"`
		TraceID   string `json:"trace_id"`
		Challenge string `json:"challenge"`
		Errors    []struct {
			Field string `json:"field"`
			Code  string `json:"code"`
		} `json:"errors"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) != nil {
		e.Code = "unexpected"
		return e
	}
	switch {
	case env.Error != nil:
		e.Code, e.Message = env.Error.Code, env.Error.Message
		if e.Code == "unprocessable" {
			// A rule may itself hold ", " (a range's examples): a part
			// that does not start with a field name continues the one
			// before it.
			last := ""
			for _, part := range strings.Split(e.Message, ", ") {
				field, rule, ok := strings.Cut(part, " ")
				switch {
				case ok && isFieldName(field):
					e.Fields[field], last = rule, field
				case last != "":
					e.Fields[last] += ", " + part
				}
			}
		}
	default:
		e.Code, e.Message, e.TraceID, e.Challenge = env.Code, env.Detail, env.TraceID, env.Challenge
		for _, f := range env.Errors {
			if _, seen := e.Fields[f.Field]; !seen {
				e.Fields[f.Field] = f.Code
			}
		}
	}
	return e
}

func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}

// The API's shapes, as much of them as the pages read.

// Session is a signed-in session.
type Session struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Me is the signed-in user.
type Me struct {
	ID          string `json:"id"`
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
	Staff       bool   `json:"staff"`
	// EmailVerified is false until the user opens the emailed link.
	EmailVerified bool `json:"email_verified"`
	// AvatarMediaID is the user's avatar at darkroom (a public image
	// parlor made from a variant); empty when none.
	AvatarMediaID string `json:"avatar_media_id"`
}

// Account is one of the user's accounts, with the user's role in it.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Personal  bool      `json:"personal"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// Member is a membership as the member list shows it.
type Member struct {
	UserID    string    `json:"user_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// Invitation is a created invitation; Token is shown once.
type Invitation struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Membership is the answer to an accepted invitation.
type Membership struct {
	AccountID string `json:"account_id"`
	UserID    string `json:"user_id"`
	Role      string `json:"role"`
}

// StaffUser is a staff directory record.
type StaffUser struct {
	ID          string     `json:"id"`
	Email       string     `json:"email"`
	DisplayName string     `json:"display_name"`
	DisabledAt  *time.Time `json:"disabled_at"`
	VerifiedAt  *time.Time `json:"verified_at"`
	CreatedAt   time.Time  `json:"created_at"`
}

// CustomerEntitlement is the customer's view of an entitlement.
type CustomerEntitlement struct {
	Product   string     `json:"product"`
	Status    string     `json:"status"`
	Source    *string    `json:"source"`
	Reference *string    `json:"reference"`
	GrantedAt time.Time  `json:"granted_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// Entitlement is the operator's view of an entitlement row.
type Entitlement struct {
	ID           int64      `json:"id"`
	AccountID    string     `json:"account_id"`
	Product      string     `json:"product"`
	Status       string     `json:"status"`
	VersionRange *string    `json:"version_range"`
	Source       *string    `json:"source"`
	Reference    *string    `json:"reference"`
	GrantedBy    string     `json:"granted_by"`
	RevokedBy    *string    `json:"revoked_by"`
	GrantedAt    time.Time  `json:"granted_at"`
	RevokedAt    *time.Time `json:"revoked_at"`
	// MaxInstallations is nil for unlimited.
	MaxInstallations *int `json:"max_installations"`
}

// Release is a published release.
type Release struct {
	ID          int64     `json:"id"`
	Product     string    `json:"product"`
	Version     string    `json:"version"`
	Notes       *string   `json:"notes"`
	PublishedAt time.Time `json:"published_at"`
}

// AuditEvent is one entry of an account's timeline.
type AuditEvent struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	OccurredAt  time.Time `json:"occurred_at"`
	ActorUserID string    `json:"actor_user_id"`
	Product     string    `json:"product"`
	Version     string    `json:"version"`
	// ReleaseID names the release of a release or approval event.
	ReleaseID *int64 `json:"release_id"`
}

// Capability is a single-use download capability.
type Capability struct {
	Token        string    `json:"token"`
	Artifact     string    `json:"artifact"`
	VersionRange *string   `json:"version_range"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// Register creates a user.
func (c *Client) Register(ctx context.Context, email, password string) error {
	return c.do(ctx, "", "POST", "/v1/users", map[string]string{"email": email, "password": password}, nil)
}

// SignIn opens a session.
func (c *Client) SignIn(ctx context.Context, email, password string) (Session, error) {
	var s Session
	err := c.do(ctx, "", "POST", "/v1/session", map[string]string{"email": email, "password": password}, &s)
	return s, err
}

// SignOut ends the session of token.
func (c *Client) SignOut(ctx context.Context, token string) error {
	return c.do(ctx, token, "DELETE", "/v1/session", nil, nil)
}

// Me reads the signed-in user.
func (c *Client) Me(ctx context.Context, token string) (Me, error) {
	var m Me
	err := c.do(ctx, token, "GET", "/v1/me", nil, &m)
	return m, err
}

// Accounts lists the user's accounts.
func (c *Client) Accounts(ctx context.Context, token string) ([]Account, error) {
	var out []Account
	err := c.do(ctx, token, "GET", "/v1/accounts?limit=200", nil, &out)
	return out, err
}

// Account reads one account.
func (c *Client) Account(ctx context.Context, token, id string) (Account, error) {
	var a Account
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id), nil, &a)
	return a, err
}

// CreateAccount creates a team account owned by the user.
func (c *Client) CreateAccount(ctx context.Context, token, name string) (Account, error) {
	var a Account
	err := c.do(ctx, token, "POST", "/v1/accounts", map[string]string{"name": name}, &a)
	return a, err
}

// RenameAccount renames an account.
func (c *Client) RenameAccount(ctx context.Context, token, id, name string) error {
	return c.do(ctx, token, "PATCH", "/v1/accounts/"+url.PathEscape(id), map[string]string{"name": name}, nil)
}

// DeleteAccount deletes an account.
func (c *Client) DeleteAccount(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(id), nil, nil)
}

// Members lists an account's members.
func (c *Client) Members(ctx context.Context, token, id string) ([]Member, error) {
	var out struct {
		Members []Member `json:"members"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/members?limit=200", nil, &out)
	return out.Members, err
}

// Invite invites email to an account with role.
func (c *Client) Invite(ctx context.Context, token, id, email, role string) (Invitation, error) {
	var inv Invitation
	err := c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/invitations",
		map[string]string{"email": email, "role": role}, &inv)
	return inv, err
}

// ChangeRole changes a member's role.
func (c *Client) ChangeRole(ctx context.Context, token, id, userID, role string) error {
	return c.do(ctx, token, "PATCH", "/v1/accounts/"+url.PathEscape(id)+"/members/"+url.PathEscape(userID),
		map[string]string{"role": role}, nil)
}

// RemoveMember removes a member from an account.
func (c *Client) RemoveMember(ctx context.Context, token, id, userID string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(id)+"/members/"+url.PathEscape(userID), nil, nil)
}

// AcceptInvitation makes the user a member of the invitation's account.
func (c *Client) AcceptInvitation(ctx context.Context, token, invitation string) (Membership, error) {
	var m Membership
	err := c.do(ctx, token, "POST", "/v1/invitations/accept", map[string]string{"token": invitation}, &m)
	return m, err
}

// InvitationPreview is what an invitation's token offers its holder.
type InvitationPreview struct {
	AccountName  string    `json:"account_name"`
	Role         string    `json:"role"`
	Email        string    `json:"email"`
	InviterEmail string    `json:"inviter_email"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// PreviewInvitation reads an open invitation by its token, signed in or
// not.
func (c *Client) PreviewInvitation(ctx context.Context, invitation string) (InvitationPreview, error) {
	var out struct {
		Invitation InvitationPreview `json:"invitation"`
	}
	err := c.do(ctx, "", "POST", "/v1/invitations/preview", map[string]string{"token": invitation}, &out)
	return out.Invitation, err
}

// Entitlements lists an account's entitlements as a customer sees them.
func (c *Client) Entitlements(ctx context.Context, token, id string) ([]CustomerEntitlement, error) {
	var out struct {
		Entitlements []CustomerEntitlement `json:"entitlements"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/entitlements", nil, &out)
	return out.Entitlements, err
}

// Holding is one product an account holds, with its version range (nil:
// every version).
type Holding struct {
	Product      string    `json:"product"`
	VersionRange *string   `json:"version_range"`
	GrantedAt    time.Time `json:"granted_at"`
}

// Holdings lists every product the account holds (box's holdings).
func (c *Client) Holdings(ctx context.Context, token, id string) ([]Holding, error) {
	var out struct {
		Holdings []Holding `json:"holdings"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/holdings", nil, &out)
	return out.Holdings, err
}

// Installation is one running copy of a unit at a customer; AccountID is
// set in the operator's list only.
type Installation struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"account_id"`
	Product     string    `json:"product"`
	Fingerprint string    `json:"fingerprint"`
	Name        string    `json:"name"`
	Version     *string   `json:"version"`
	Status      string    `json:"status"`
	LastSeenAt  time.Time `json:"last_seen_at"`
	CreatedAt   time.Time `json:"created_at"`
}

// Installations lists the account's installations, newest first.
func (c *Client) Installations(ctx context.Context, token, id string) ([]Installation, error) {
	var out struct {
		Installations []Installation `json:"installations"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/installations", nil, &out)
	return out.Installations, err
}

// DeactivateInstallation ends an installation.
func (c *Client) DeactivateInstallation(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/installations/"+url.PathEscape(id), nil, nil)
}

// OperatorInstallations lists one account's installations for staff.
func (c *Client) OperatorInstallations(ctx context.Context, token, accountID string) ([]Installation, error) {
	var out struct {
		Installations []Installation `json:"installations"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/installations?account_id="+url.QueryEscape(accountID)+"&limit=200", nil, &out)
	return out.Installations, err
}

// ReleaseFile is one downloadable file of a release (keyholder's list).
type ReleaseFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ReleaseFiles lists a release's downloadable files for the account.
func (c *Client) ReleaseFiles(ctx context.Context, token, id, product, version string) ([]ReleaseFile, error) {
	var out struct {
		Files []ReleaseFile `json:"files"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/downloads/"+url.PathEscape(product)+"/"+url.PathEscape(version), nil, &out)
	return out.Files, err
}

// Claim claims the free kit for an account.
func (c *Client) Claim(ctx context.Context, token, id string) error {
	return c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/claims", nil, nil)
}

// AccountReleases lists the releases an account's entitlements cover.
func (c *Client) AccountReleases(ctx context.Context, token, id string) ([]Release, error) {
	var out struct {
		Releases []Release `json:"releases"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/releases", nil, &out)
	return out.Releases, err
}

// Approve approves a release for an account.
func (c *Client) Approve(ctx context.Context, token, id string, releaseID int64) error {
	return c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/approvals",
		map[string]int64{"release_id": releaseID}, nil)
}

// Timeline reads the newest page of an account's audit timeline.
func (c *Client) Timeline(ctx context.Context, token, id string) ([]AuditEvent, error) {
	events, _, err := c.TimelinePage(ctx, token, id, "")
	return events, err
}

// TimelinePage reads a page of an account's audit timeline: the newest,
// or with cursor the page after the one that gave it. next is the older
// page's cursor, empty on the last.
func (c *Client) TimelinePage(ctx context.Context, token, id, cursor string) (events []AuditEvent, next string, err error) {
	path := "/v1/accounts/" + url.PathEscape(id) + "/audit-events" + cursorQuery(cursor)
	var out struct {
		Events     []AuditEvent `json:"events"`
		NextCursor *string      `json:"next_cursor"`
	}
	err = c.do(ctx, token, "GET", path, nil, &out)
	return out.Events, deref(out.NextCursor), err
}

// Fetch asks for a capability to download artifact within versionRange
// ("" for every version).
func (c *Client) Fetch(ctx context.Context, token, id, artifact, versionRange string) (Capability, error) {
	body := map[string]any{"artifact": artifact}
	if versionRange != "" {
		body["version_range"] = versionRange
	}
	var out struct {
		Capability Capability `json:"capability"`
	}
	err := c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/artifact_fetches", body, &out)
	return out.Capability, err
}

// SearchUsers searches the staff directory.
func (c *Client) SearchUsers(ctx context.Context, token, query string) ([]StaffUser, error) {
	var out struct {
		Users []StaffUser `json:"users"`
	}
	q := url.Values{"query": {query}, "limit": {"50"}}
	err := c.do(ctx, token, "GET", "/v1/operator/users?"+q.Encode(), nil, &out)
	return out.Users, err
}

// EntitlementFilter narrows the operator's entitlement list.
type EntitlementFilter struct {
	AccountID, Product, Status, Cursor string
	Limit                              int
}

// OperatorEntitlements lists entitlement rows, newest first, one page at
// a time.
func (c *Client) OperatorEntitlements(ctx context.Context, token string, f EntitlementFilter) ([]Entitlement, string, error) {
	q := url.Values{}
	for k, v := range map[string]string{"account_id": f.AccountID, "product": f.Product, "status": f.Status, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", fmt.Sprint(f.Limit))
	}
	var out struct {
		Entitlements []Entitlement `json:"entitlements"`
		NextCursor   *string       `json:"next_cursor"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/entitlements?"+q.Encode(), nil, &out)
	next := ""
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Entitlements, next, err
}

// Grant is the operator's grant request.
type Grant struct {
	AccountID    string `json:"account_id"`
	Product      string `json:"product"`
	VersionRange string `json:"version_range,omitempty"`
	Source       string `json:"source,omitempty"`
	Reference    string `json:"reference,omitempty"`
	// MaxInstallations is nil for unlimited.
	MaxInstallations *int `json:"max_installations,omitempty"`
}

// GrantEntitlement grants g. On a 409 the existing active row is returned
// with the error.
func (c *Client) GrantEntitlement(ctx context.Context, token string, g Grant) (Entitlement, error) {
	var out, dup struct {
		Entitlement Entitlement `json:"entitlement"`
	}
	err := c.doConflict(ctx, token, "POST", "/v1/operator/entitlements", g, &out, &dup)
	if StatusOf(err) == http.StatusConflict {
		return dup.Entitlement, err
	}
	return out.Entitlement, err
}

// RevokeEntitlement revokes the row id.
func (c *Client) RevokeEntitlement(ctx context.Context, token string, id int64) (Entitlement, error) {
	var out struct {
		Entitlement Entitlement `json:"entitlement"`
	}
	err := c.do(ctx, token, "POST", fmt.Sprintf("/v1/operator/entitlements/%d/revoke", id), nil, &out)
	return out.Entitlement, err
}

// Releases lists published releases, optionally of one product.
func (c *Client) Releases(ctx context.Context, token, product string) ([]Release, error) {
	q := url.Values{"limit": {"200"}}
	if product != "" {
		q.Set("product", product)
	}
	var out struct {
		Releases []Release `json:"releases"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/releases?"+q.Encode(), nil, &out)
	return out.Releases, err
}

// PublishRelease publishes a release.
func (c *Client) PublishRelease(ctx context.Context, token, product, version, notes string) (Release, error) {
	body := map[string]string{"product": product, "version": version}
	if notes != "" {
		body["notes"] = notes
	}
	var out struct {
		Release Release `json:"release"`
	}
	err := c.do(ctx, token, "POST", "/v1/operator/releases", body, &out)
	return out.Release, err
}

type forwardedForKey struct{}

// forwardFor keeps, for the API calls a page makes, the X-Forwarded-For
// chain a proxy sends: the one parlor received with the address it
// received it from appended. The gateway believes the chain only from the
// addresses in its TRUSTED_PROXIES, reading it from the right, so an entry
// a browser wrote itself is never taken for its address.
func forwardFor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			peer = r.RemoteAddr
		}
		chain := peer
		if prior := strings.Join(r.Header.Values("X-Forwarded-For"), ", "); prior != "" {
			chain = prior + ", " + peer
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardedForKey{}, chain)))
	})
}
