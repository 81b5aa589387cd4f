// Package courier is the courier service's domain: transactional emails and
// their status history, address suppressions, the templates messages are
// rendered from, the events courier emits, the send loop over a Mailer, and
// the ports it depends on (Store for persistence, Mailer for delivery). It
// holds no SQL and no HTTP; sqlstore, httpapi, smtp and localmail adapt it.
package courier

import (
	"context"
	"time"
)

// Error codes courier answers with. httpapi maps each to one HTTP status.
const (
	CodeValidation   = "validation_failed" // 422
	CodeUnauthorized = "unauthorized"      // 401
	CodeNotFound     = "not_found"         // 404
	CodeUnavailable  = "unavailable"       // 503
)

// Email statuses. queued is the only state a message leaves; the others
// are final, and the database refuses to change a final status.
const (
	StatusQueued     = "queued"
	StatusDelivered  = "delivered"
	StatusBounced    = "bounced"
	StatusFailed     = "failed"
	StatusSuppressed = "suppressed"
)

// Suppression reasons.
const (
	ReasonHardBounce = "hard_bounce"
	ReasonComplaint  = "complaint"
)

// Why a send was skipped (courier.notification.suppressed's data.reason).
const (
	SkipAddressSuppressed = "address_suppressed"
	SkipPreferenceOff     = "preference_off"
)

// Email is one transactional message. Its template data is never part of
// it: the store keeps that sealed and hands it only to the send loop.
type Email struct {
	ID          string
	Template    string
	To          string
	Locale      string
	Status      string
	RequestedBy string
	Attempts    int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	History     []StatusChange
	// Pushes is how many pushes the send queued (CreateEmail's answer).
	Pushes int
}

// StatusChange is one entry of a message's history: a status it entered,
// or a temporary failure it stayed queued through (Status queued, Detail
// saying why).
type StatusChange struct {
	Status    string
	At        time.Time
	Detail    string
	AttemptID string
}

// NewEmail is what the store records for an accepted send request.
type NewEmail struct {
	ID          string
	Template    string
	To          string
	Locale      string
	RequestedBy string
	// SealedData is the template data sealed for this email's id; nil when
	// the message is suppressed (nothing will ever be rendered).
	SealedData []byte
	// PushCategory, when set, has the message pushed to every subscription
	// of the user the address belongs to whose preference for it is on
	// (PushCategory; "" for every security message).
	PushCategory string
}

// Claimed is a queued message leased to one send attempt.
type Claimed struct {
	ID         string
	Template   string
	To         string
	Locale     string
	SealedData []byte
	AttemptID  string
	Attempts   int
	CreatedAt  time.Time
}

// Attempt names one send attempt of one message.
type Attempt struct{ ID, AttemptID string }

// Suppression is an address courier no longer writes to.
type Suppression struct {
	ID        string
	Address   string
	Reason    string
	CreatedAt time.Time
}

// Store is courier's persistence port. Every method that changes state
// writes its events to the outbox in the same transaction.
type Store interface {
	// CreateEmail records a send request and its courier.email.queued (or
	// courier.notification.suppressed) event. In the same transaction it
	// hands decide the suppression reasons that hold for the address and
	// the preferences of the user it belongs to (nil when none), and
	// records the message as suppressed for the reason decide returns.
	CreateEmail(ctx context.Context, in NewEmail, decide func(reasons []string, prefs *Preferences) string) (Email, error)
	// Preferences returns a user's preferences (the defaults if unset).
	Preferences(ctx context.Context, userID string) (Preferences, error)
	// UpdatePreferences applies patch and records address as the user's.
	UpdatePreferences(ctx context.Context, userID, address string, patch PreferencesPatch) (Preferences, error)
	// Email returns a message with its history, or CodeNotFound.
	Email(ctx context.Context, id string) (Email, error)
	// Suppress records a complaint or hard bounce for address; a repeat
	// returns the existing row and writes no event.
	Suppress(ctx context.Context, address, reason string) (Suppression, bool, error)

	// ClaimDue leases up to limit due queued messages for lease, each
	// under a new attempt id.
	ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]Claimed, error)
	// DeliveredAll, Bounced and Failed finish messages, erase their sealed
	// data and write their events (DeliveredAll a batch of accepted ones
	// in one transaction); Retry records a temporary failure and the next
	// attempt's time. Each applies only while the attempt id still holds
	// the lease, and reports (per attempt) whether it did.
	DeliveredAll(ctx context.Context, attempts []Attempt) ([]bool, error)
	Bounced(ctx context.Context, id, attemptID, detail string) (bool, error)
	Failed(ctx context.Context, id, attemptID, detail string) (bool, error)
	Retry(ctx context.Context, id, attemptID, detail string, at time.Time) (bool, error)
}
