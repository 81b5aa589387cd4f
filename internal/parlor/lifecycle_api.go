package parlor

import "context"

// VerifyEmail spends a verification token (no session needed).
func (c *Client) VerifyEmail(ctx context.Context, token string) error {
	return c.do(ctx, "", "POST", "/v1/email/verify", map[string]string{"token": token}, nil)
}

// ResendVerification asks identity to mail the signed-in user a new link.
func (c *Client) ResendVerification(ctx context.Context, session string) error {
	return c.do(ctx, session, "POST", "/v1/me/email/verification", nil, nil)
}

// RequestPasswordReset asks for a reset link to email.
func (c *Client) RequestPasswordReset(ctx context.Context, email string) error {
	return c.do(ctx, "", "POST", "/v1/password/reset", map[string]string{"email": email}, nil)
}

// ConfirmPasswordReset sets a new password with a reset token; code is
// the second factor (a TOTP or recovery code) of a user with MFA, empty
// for the first attempt (identity answers mfa_required when it needs one).
func (c *Client) ConfirmPasswordReset(ctx context.Context, token, password, code string) error {
	body := map[string]string{"token": token, "password": password}
	if code != "" {
		body["code"] = code
	}
	return c.do(ctx, "", "POST", "/v1/password/reset/confirm", body, nil)
}

// RequestEmailChange asks identity to move the signed-in user to email.
func (c *Client) RequestEmailChange(ctx context.Context, session, email, password string) error {
	return c.do(ctx, session, "POST", "/v1/me/email", map[string]string{"email": email, "password": password}, nil)
}

// ConfirmEmailChange spends an email change token.
func (c *Client) ConfirmEmailChange(ctx context.Context, token string) error {
	return c.do(ctx, "", "POST", "/v1/email/change/confirm", map[string]string{"token": token}, nil)
}
