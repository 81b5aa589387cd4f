package identity

import (
	"context"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
)

// Error codes of the credential lifecycle (identity-lifecycle.md).
const (
	CodeTokenExpired            = "token_expired"             // 410
	CodeTokenUsed               = "token_used"                // 410
	CodeEmailNotVerified        = "email_not_verified"        // 403
	CodeInvitationEmailMismatch = "invitation_email_mismatch" // 403
	CodeRateLimited             = "rate_limited"              // 429, with RetryAfter
)

var (
	ErrTokenUnknown            = errs.New(CodeNotFound, "this link is not valid; ask for a new one")
	ErrTokenExpired            = errs.New(CodeTokenExpired, "this link has expired; ask for a new one")
	ErrTokenUsed               = errs.New(CodeTokenUsed, "this link has already been used")
	ErrEmailNotVerified        = errs.New(CodeEmailNotVerified, "verify your email address before accepting an invitation")
	ErrInvitationEmailMismatch = errs.New(CodeInvitationEmailMismatch, "this invitation was sent to another email address")
	ErrAlreadyVerified         = errs.New(CodeConflict, "your email address is already verified")
)

// Token purposes and lifetimes (identity-lifecycle.md sections 1-3).
const (
	PurposeVerifyEmail   = "verify_email"
	PurposePasswordReset = "password_reset"
	PurposeEmailChange   = "email_change"

	VerificationTTL = 24 * time.Hour
	ResetTTL        = time.Hour
	EmailChangeTTL  = time.Hour
	// VerificationResendGap is the least time between two verification
	// mails to one user.
	VerificationResendGap = time.Minute
)

// OneTimeToken is a token as the store receives it: its digest, what it
// is for, the address it concerns and how long it lives.
type OneTimeToken struct {
	Purpose string
	Digest  string
	Email   string
	TTL     time.Duration
}

// LifecycleStore persists the credential lifecycle. Every method that
// consumes a token does so with one conditional UPDATE, so of any number
// of concurrent uses exactly one succeeds; the others get ErrTokenUsed.
type LifecycleStore interface {
	// VerifyEmail consumes a verify_email token and marks its address
	// verified, with its event. Errors: ErrTokenUnknown, ErrTokenExpired,
	// ErrTokenUsed.
	VerifyEmail(ctx context.Context, digest string) (User, error)
	// IssueVerification stores a new verification token and its mail for
	// userID unless one went out less than gap ago (a rate-limit error with
	// RetryAfter) or the address is verified (ErrAlreadyVerified). Past
	// the mail's limits it writes neither and returns nil, as do the two
	// methods below.
	IssueVerification(ctx context.Context, userID string, tok OneTimeToken, gap time.Duration, mail OutgoingMail) error
	// IssuePasswordReset stores a reset token and its mail when a user has
	// tok.Email; for an unknown address it writes nothing. found says which.
	IssuePasswordReset(ctx context.Context, tok OneTimeToken, mail OutgoingMail) (found bool, err error)
	// PasswordResetUser returns the user of a live password_reset token
	// without spending it. Errors: as VerifyEmail.
	PasswordResetUser(ctx context.Context, digest string) (string, error)
	// ResetPassword consumes a password_reset token and, in the same
	// transaction, consumes factor when the user has MFA enabled, sets the
	// hash, clears the lockout, ends every session of the user (an
	// identity.session.revoked each) and every other outstanding one-time
	// token, open MFA challenge and OIDC token of the user. Errors: as VerifyEmail,
	// ErrMFARequired (MFA enabled and factor nil), ErrInvalidCode (the
	// factor was used meanwhile); after either nothing is written.
	ResetPassword(ctx context.Context, digest, hash string, factor *Factor, notice OutgoingMail) error
	// IssueEmailChange stores an email_change token for userID's new
	// address tok.Email and its mail, unless another user holds that
	// address (then nothing is written and no error returned).
	IssueEmailChange(ctx context.Context, userID string, tok OneTimeToken, mail OutgoingMail) error
	// ConfirmEmailChange consumes an email_change token and, in the same
	// transaction, moves the user to the new address (verified), ends every
	// session (reason email_change), every other outstanding one-time
	// token (a reset link sent to the old address above all), open MFA
	// challenge and OIDC token of the user, and queues notice(old, new) to
	// the old address. Errors: as VerifyEmail, ErrEmailTaken (409).
	ConfirmEmailChange(ctx context.Context, digest string, notice func(oldEmail, newEmail string) (OutgoingMail, error)) (User, error)

	// PendingMail returns up to limit queued mails due by now, oldest first.
	PendingMail(ctx context.Context, limit int) ([]OutgoingMail, error)
	// MailSent marks a mail handed to courier and erases its sealed data.
	MailSent(ctx context.Context, id string) error
	// MailRetry counts a failed attempt and schedules the next at next.
	MailRetry(ctx context.Context, id string, next time.Time, reason string) error
}

// tokenFor returns a fresh token and the store's view of it.
func tokenFor(purpose, email string, ttl time.Duration) (string, OneTimeToken) {
	token, digest := newToken()
	return token, OneTimeToken{Purpose: purpose, Digest: digest, Email: email, TTL: ttl}
}

// VerifyEmail consumes a verification token and returns the verified
// user. Errors: CodeValidation (token required), CodeNotFound,
// CodeTokenExpired, CodeTokenUsed.
func (s *Service) VerifyEmail(ctx context.Context, token string) (User, error) {
	digest, err := tokenDigestOf(token)
	if err != nil {
		return User{}, err
	}
	return s.store.VerifyEmail(ctx, digest)
}

// ResendVerification mails the principal a new verification link; earlier
// links stay valid until they expire. Past MailPerAddress resends in
// MailWindow the answer is the same and nothing is sent (the address is
// not proven to be the caller's). Errors: CodeRateLimited (with
// RetryAfter), CodeConflict (already verified).
func (s *Service) ResendVerification(ctx context.Context, p Principal) error {
	if p.User.EmailVerifiedAt != nil {
		return ErrAlreadyVerified
	}
	token, tok := tokenFor(PurposeVerifyEmail, p.User.Email, VerificationTTL)
	mail, err := s.mail.Mail(TemplateVerifyEmail, p.User.Email, map[string]string{"link": s.link("/verify", token)})
	if err != nil {
		return err
	}
	return s.store.IssueVerification(ctx, p.User.ID, tok, VerificationResendGap, s.limited(mail, ""))
}

// RateLimitedError is the answer to a request made again too soon.
func RateLimitedError(wait time.Duration) error {
	if wait < time.Second {
		wait = time.Second
	}
	return &errs.Error{Code: CodeRateLimited, Message: "a verification email was sent less than a minute ago; try again shortly", RetryAfter: wait}
}

// verificationFor is the token and mail a registration writes.
func (s *Service) verificationFor(email string) (OneTimeToken, OutgoingMail, error) {
	token, tok := tokenFor(PurposeVerifyEmail, email, VerificationTTL)
	mail, err := s.mail.Mail(TemplateVerifyEmail, email, map[string]string{"link": s.link("/verify", token)})
	return tok, mail, err
}

// tokenDigestOf checks a presented token's shape and returns its digest.
func tokenDigestOf(token string) (string, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return "", &errs.Error{Code: CodeValidation, Message: "token is required", Fields: []errs.FieldError{{Field: "token", Code: RuleRequired}}}
	}
	if len(token) > 256 {
		return "", ErrTokenUnknown
	}
	return TokenDigest(token), nil
}
