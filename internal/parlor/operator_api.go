package parlor

import (
	"context"
	"net/url"
	"time"
)

// StaffAccount is an account as staff read it: no role, since staff hold
// none in it.
type StaffAccount struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Personal  bool      `json:"personal"`
	CreatedAt time.Time `json:"created_at"`
}

// StaffAccount reads any account (staff only).
func (c *Client) StaffAccount(ctx context.Context, token, id string) (StaffAccount, error) {
	var out struct {
		Account StaffAccount `json:"account"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/accounts/"+url.PathEscape(id), nil, &out)
	return out.Account, err
}

// StaffAccounts reads a page of every account, or of those whose name,
// handle or a member's address contains query (staff only); next is ""
// on the last page.
func (c *Client) StaffAccounts(ctx context.Context, token, query, cursor string) (accounts []StaffAccount, next string, err error) {
	var out struct {
		Accounts   []StaffAccount `json:"accounts"`
		NextCursor *string        `json:"next_cursor"`
	}
	q := url.Values{"limit": {"50"}}
	if query != "" {
		q.Set("query", query)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	err = c.do(ctx, token, "GET", "/v1/operator/accounts?"+q.Encode(), nil, &out)
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Accounts, next, err
}

// StaffMembers reads one page of any account's members (staff only);
// next is "" on the last page.
func (c *Client) StaffMembers(ctx context.Context, token, id, cursor string) (members []Member, next string, err error) {
	q := url.Values{"limit": {"200"}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out struct {
		Members    []Member `json:"members"`
		NextCursor *string  `json:"next_cursor"`
	}
	err = c.do(ctx, token, "GET", "/v1/operator/accounts/"+url.PathEscape(id)+"/members?"+q.Encode(), nil, &out)
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Members, next, err
}

// StaffPulls reads a page of any account's pulls, as Pulls does (staff
// only).
func (c *Client) StaffPulls(ctx context.Context, token, id, cursor string) (PullPage, error) {
	return c.pullPage(ctx, token, "/v1/operator/accounts/"+url.PathEscape(id)+"/pulls", cursor)
}
