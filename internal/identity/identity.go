// Package identity is the identity service's domain: users, sessions,
// accounts (tenants), memberships, roles, invitations and the staff
// directory. It holds the rules; the SQL adapter (sqlstore) and the HTTP
// adapter (httpapi) only translate.
package identity

import (
	"time"
)

// Role is a member's role in an account. Roles are ordered:
// owner > admin > member.
type Role string

const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleAdmin:
		return 2
	case RoleMember:
		return 1
	default:
		return 0
	}
}

// AtLeast reports whether r permits what min permits.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() && r.rank() > 0 }

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// User is a registered person. The password hash never leaves the store.
type User struct {
	ID          string
	Email       string
	DisplayName string
	Staff       bool
	CreatedAt   time.Time
	// EmailVerifiedAt is when the user proved they hold Email; nil until
	// then.
	EmailVerifiedAt *time.Time
	// AvatarMediaID is the darkroom media shown as the user's avatar;
	// empty when none. Identity keeps the id only (it never asks
	// darkroom), so the client that sets it stores the image first.
	AvatarMediaID string
}

// StaffRecord is what the operator directory shows of a user: nothing
// secret.
type StaffRecord struct {
	ID          string
	Email       string
	DisplayName string
	DisabledAt  *time.Time
	VerifiedAt  *time.Time
	CreatedAt   time.Time
}

// Session is a signed-in period of one user.
type Session struct {
	ID        string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// LastSeenAt is when the session was last used, to within a minute:
	// Authenticate refreshes it only when it is older than that.
	LastSeenAt time.Time
}

// LastSeenGranularity is how stale a session's LastSeenAt may be: a
// request writes it only when it is older, so reads stay reads.
const LastSeenGranularity = time.Minute

// Account is a tenant: the personal account made at registration, or a
// team account. Role is the caller's role in it.
type Account struct {
	ID        string
	Name      string
	Slug      string
	Personal  bool
	Role      Role
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Membership is one user's role in one account.
type Membership struct {
	AccountID string
	UserID    string
	Email     string
	Role      Role
	CreatedAt time.Time
}

// Invitation is an offer to join an account. Token is set only in the
// response that creates it; the store keeps a digest.
type Invitation struct {
	ID        string
	AccountID string
	Email     string
	Role      Role
	Token     string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// InvitationPreview is what an open invitation's token shows its holder
// before accepting: the account, the role, the invited address and who
// invited (the mail said as much).
type InvitationPreview struct {
	AccountName  string
	Role         Role
	Email        string
	InviterEmail string
	ExpiresAt    time.Time
}

// Principal is an authenticated caller: the user, the session, and — on
// account routes — the account and the caller's membership of it.
type Principal struct {
	User      User
	SessionID string

	// Account is set when the caller is a member of the account a route
	// names; nil when the route names none or the caller is not a member.
	Account *Account

	// APIKey is set when the caller is an API key rather than a person:
	// then User is empty and Account, when set, is the key's own account
	// with Role RoleAPIKey.
	APIKey *APIKey
}

// InvitationTTL is how long an invitation can be accepted.
const InvitationTTL = 7 * 24 * time.Hour
