package identity

import (
	"context"
	"time"
)

// NewUser is a registration as the store receives it: validated, the
// password already hashed, the personal account's handle already chosen.
type NewUser struct {
	Email        string
	DisplayName  string
	PasswordHash string
	PersonalSlug string
	// Verification is the email verification token issued with the
	// registration, and VerificationMail its message; both are written in
	// the registration's transaction.
	Verification     OneTimeToken
	VerificationMail OutgoingMail
}

// Credentials is what sign-in needs to know of a user.
type Credentials struct {
	UserID       string
	PasswordHash string
	LockedUntil  *time.Time
	Disabled     bool
}

// Store persists identity. Every method that changes state writes its
// events to the outbox in the same transaction. Methods return the
// service's errors (ErrEmailTaken, ErrLastOwnerDemoted, …) where only the
// database can decide; anything else is an internal failure.
type Store interface {
	KeyStore
	LifecycleStore
	MFAStore
	APIKeyStore
	StaffAPIKeyStore
	StaffStore

	// CreateUser creates the user, a personal account and the owner
	// membership. Errors: ErrEmailTaken, ErrSlugTaken (retry with another
	// suffix).
	CreateUser(ctx context.Context, u NewUser) (User, Account, error)
	// Credentials looks a user up by normalised email. Errors: ErrUserNotFound.
	Credentials(ctx context.Context, email string) (Credentials, error)
	// RecordLoginFailure counts one wrong password atomically, locking the
	// user for lockFor when the count reaches threshold. counted is false
	// when the user was already locked (lockedUntil then says until when).
	RecordLoginFailure(ctx context.Context, userID string, threshold int, lockFor time.Duration) (counted bool, lockedUntil time.Time, err error)
	// AddressLockedUntil returns when the lockout of an address no user
	// holds ends (nil when not locked).
	AddressLockedUntil(ctx context.Context, email string) (*time.Time, error)
	// RecordAddressFailure is RecordLoginFailure for a sign-in at an
	// address no user holds: the failures are counted for the address, so
	// it locks exactly as a user does.
	RecordAddressFailure(ctx context.Context, email string, threshold int, lockFor time.Duration) (counted bool, lockedUntil time.Time, err error)
	// StartSession resets the failure count, replaces the password hash
	// when rehash is not empty, and opens a session lasting ttl, unless the
	// user became locked meanwhile. Errors: the locked error.
	StartSession(ctx context.Context, userID string, ttl time.Duration, rehash string) (Session, error)
	// EndSession ends one session; ending an ended session is a no-op.
	EndSession(ctx context.Context, sessionID string) error
	// Authenticate resolves a live session of userID to its principal in
	// one query; with accountID it also loads the caller's membership of
	// that account (Principal.Account nil when not a member).
	// Errors: ErrUnauthorized.
	Authenticate(ctx context.Context, sessionID, userID, accountID string) (Principal, error)
	// SetStaff marks the user with email as staff or not; a change writes
	// an audit row naming actor and its event in the same transaction, and
	// setting what is already so writes nothing. Errors: ErrUserNotFound.
	SetStaff(ctx context.Context, email string, staff bool, actor string) error
	// ListSessions returns userID's live sessions, newest first.
	ListSessions(ctx context.Context, userID string) ([]Session, error)
	// EndUserSession ends userID's live session sessionID; found is
	// false when userID has no such live session.
	EndUserSession(ctx context.Context, userID, sessionID string) (found bool, err error)
	// EndOtherSessions ends every live session of userID but keep.
	EndOtherSessions(ctx context.Context, userID, keep string) error
	// ChangePassword replaces userID's password hash, resets the failure
	// count and ends every session but keep, every outstanding one-time
	// token (reset, verification, email change), open MFA challenge and
	// OIDC token of the user, unless keep has ended or the user became
	// locked meanwhile, and queues notice (password_changed_notice) to the
	// user's address. Errors: ErrUnauthorized, the locked error.
	ChangePassword(ctx context.Context, userID, keep, hash string, notice OutgoingMail) error
	// SetAvatar sets userID's avatar media id ("" removes it) and
	// returns the user as stored after it. Errors: ErrUnauthorized (the
	// user is gone or disabled).
	SetAvatar(ctx context.Context, userID, mediaID string) (User, error)
	// SearchUsers returns users whose email or display name contains
	// query (matched literally, case-insensitively), ordered by email.
	SearchUsers(ctx context.Context, query string, limit int) ([]StaffRecord, error)

	// ListAccounts returns a page of the accounts userID belongs to, with
	// their role, ordered by (created_at, id); next is nil on the last page.
	ListAccounts(ctx context.Context, userID string, page PageRequest) (accounts []Account, next *Cursor, err error)
	// CreateAccount creates a team account owned by ownerID. Errors: ErrSlugTaken.
	CreateAccount(ctx context.Context, ownerID, name, slug string) (Account, error)
	// RenameAccount changes an account's name (never its slug).
	// The caller's role is re-read under the account's lock here and in
	// every method below that names a caller (by, invitedBy), so a role
	// lost since authentication is not used. Errors: ErrAccountNotFound,
	// ErrRoleForbidden.
	RenameAccount(ctx context.Context, accountID, name, by string) (Account, error)
	// DeleteAccount removes an account and everything scoped by it.
	// Errors: ErrPersonalAccount, ErrAccountNotFound.
	DeleteAccount(ctx context.Context, accountID, by string) error
	// ListMembers returns a page of an account's memberships, ordered by
	// (created_at, user_id); next is nil on the last page.
	ListMembers(ctx context.Context, accountID string, page PageRequest) (members []Membership, next *Cursor, err error)
	// ChangeRole sets a member's role; the last owner is never demoted.
	// The caller (by) must still be an owner when the change is made.
	// Errors: ErrMemberNotFound, ErrLastOwnerDemoted, ErrRoleForbidden,
	// ErrAccountNotFound (by is no longer a member).
	ChangeRole(ctx context.Context, accountID, userID string, role Role, by string) (Membership, error)
	// RemoveMember ends a membership; the last owner is never removed and
	// only an owner removes an owner. The caller's role is re-read when the
	// change is made (byRole may be stale). Errors: ErrMemberNotFound,
	// ErrOwnerByAdmin, ErrLastOwnerRemoved, ErrRoleForbidden,
	// ErrAccountNotFound (by is no longer a member).
	RemoveMember(ctx context.Context, accountID, userID, by string) error
	// CreateInvitation stores an invitation under the digest of its token,
	// and its mail (to the invitee) in the same transaction.
	CreateInvitation(ctx context.Context, inv Invitation, tokenDigest, invitedBy string, mail OutgoingMail) (Invitation, error)
	// AcceptInvitation consumes the invitation with tokenDigest and makes
	// userID a member, in one transaction, when userID has verified the
	// invited address. Errors: ErrInvitationUnknown, ErrInvitationUsed,
	// ErrInvitationExpired, ErrAlreadyMember, ErrEmailNotVerified,
	// ErrInvitationEmailMismatch (the invitation stays usable after the
	// last three).
	AcceptInvitation(ctx context.Context, tokenDigest, userID string) (Membership, error)
	// PreviewInvitation reads the open invitation with tokenDigest.
	// Errors: as AcceptInvitation's first three.
	PreviewInvitation(ctx context.Context, tokenDigest string) (InvitationPreview, error)
	// DeclineInvitation ends the invitation with tokenDigest as declined
	// by userID, by one conditional UPDATE, and records the invitee's
	// removal. Errors: ErrInvitationUnknown (also when revoked or
	// replaced by a resend), ErrInvitationUsed, ErrInvitationExpired.
	DeclineInvitation(ctx context.Context, tokenDigest, userID string) error
	// ListInvitations returns a page of an account's open invitations (not
	// accepted, declined or revoked; expired ones included, since they can
	// be resent), ordered by (created_at, id); next is nil on the last page.
	ListInvitations(ctx context.Context, accountID string, page PageRequest) (invs []Invitation, next *Cursor, err error)
	// RevokeInvitation ends an open invitation of accountID. The caller
	// (by) must still be an admin. Errors: ErrInvitationNotFound,
	// ErrRoleForbidden, ErrAccountNotFound.
	RevokeInvitation(ctx context.Context, accountID, invitationID, by string) error
	// ResendInvitation gives an open invitation of accountID a new token
	// digest and a new expiry; the old token stops working in the same
	// UPDATE. mail builds the new invitation's message (to its address).
	// Errors: as RevokeInvitation.
	ResendInvitation(ctx context.Context, accountID, invitationID, tokenDigest, by string, mail func(Invitation) (OutgoingMail, error)) (Invitation, error)
	// LeaveAccount ends userID's own membership of accountID; the last
	// owner never leaves. Errors: ErrAccountNotFound (not a member),
	// ErrLastOwnerRemoved.
	LeaveAccount(ctx context.Context, accountID, userID string) error
}
