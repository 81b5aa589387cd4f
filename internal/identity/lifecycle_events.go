package identity

import "time"

// Events of the credential lifecycle.
const (
	EventUserEmailVerified = "identity.user.email_verified"
	EventSessionRevoked    = "identity.session.revoked"
)

// Reasons a session is revoked by something other than its own sign-out.
const (
	RevokedPasswordReset = "password_reset"
	RevokedEmailChange   = "email_change"
)

type (
	userEmailVerified struct {
		UserID     string    `json:"user_id"`
		Email      string    `json:"email"`
		VerifiedAt time.Time `json:"verified_at"`
	}
	sessionRevoked struct {
		SessionID string `json:"session_id"`
		UserID    string `json:"user_id"`
		Reason    string `json:"reason"`
	}
)

// UserEmailVerified is the fact of a user proving they hold email.
func UserEmailVerified(userID, email string, at time.Time) Event {
	return Event{EventUserEmailVerified, userID, userEmailVerified{userID, email, at.UTC()}}
}

// SessionRevoked is the fact of a session ended for reason.
func SessionRevoked(sessionID, userID, reason string) Event {
	return Event{EventSessionRevoked, userID, sessionRevoked{sessionID, userID, reason}}
}
