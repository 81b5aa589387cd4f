package parlor

import (
	"context"
	"net/url"
	"time"
)

// PendingInvitation is an open invitation as listed (never its token).
type PendingInvitation struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Invitations lists an account's open invitations (admins), oldest first.
func (c *Client) Invitations(ctx context.Context, token, id string) ([]PendingInvitation, error) {
	var out struct {
		Invitations []PendingInvitation `json:"invitations"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(id)+"/invitations?limit=100", nil, &out)
	return out.Invitations, err
}

// ResendInvitation mails an open invitation again with a new token; the
// token in the answer is not kept, the mail carries it.
func (c *Client) ResendInvitation(ctx context.Context, token, id, inv string) error {
	return c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(id)+"/invitations/"+url.PathEscape(inv)+"/resend", nil, nil)
}

// RevokeInvitation withdraws an open invitation.
func (c *Client) RevokeInvitation(ctx context.Context, token, id, inv string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(id)+"/invitations/"+url.PathEscape(inv), nil, nil)
}
