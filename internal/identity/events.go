package identity

import "time"

// Event types identity publishes: its manifest. The catalog must agree.
const (
	EventUserCreated       = "identity.user.created"
	EventAccountCreated    = "identity.account.created"
	EventAccountUpdated    = "identity.account.updated"
	EventAccountDeleted    = "identity.account.deleted"
	EventMemberInvited     = "identity.member.invited"
	EventMemberJoined      = "identity.member.joined"
	EventMemberRemoved     = "identity.member.removed"
	EventMemberRoleChanged = "identity.member.role_changed"
	EventStaffEnabled      = "identity.staff.enabled"
	EventStaffDisabled     = "identity.staff.disabled"
)

// EventTypes lists every type identity emits.
func EventTypes() []string {
	return []string{
		EventUserCreated, EventAccountCreated, EventAccountUpdated, EventAccountDeleted,
		EventMemberInvited, EventMemberJoined, EventMemberRemoved, EventMemberRoleChanged,
		EventStaffEnabled, EventStaffDisabled,
		EventUserEmailVerified, EventSessionRevoked,
		EventMFAEnabled, EventMFADisabled, EventAPIKeyCreated, EventAPIKeyRevoked,
		EventOIDCClientCreated, EventOIDCClientRevoked,
	}
}

// Event is a domain fact written to the outbox in the transaction that
// makes it true. Subject is the entity the fact is about.
type Event struct {
	Type    string
	Subject string
	Data    any
}

// The payloads. Ids are bare UUIDs; each schema under
// schemas/events/identity/ describes exactly these fields.
type (
	userCreated struct {
		UserID string `json:"user_id"`
		Email  string `json:"email"`
	}
	accountCreated struct {
		AccountID   string `json:"account_id"`
		Name        string `json:"name"`
		Slug        string `json:"slug"`
		Personal    bool   `json:"personal"`
		OwnerUserID string `json:"owner_user_id"`
	}
	accountUpdated struct {
		AccountID string `json:"account_id"`
		Name      string `json:"name"`
	}
	accountDeleted struct {
		AccountID string `json:"account_id"`
		DeletedBy string `json:"deleted_by"`
	}
	memberInvited struct {
		AccountID    string    `json:"account_id"`
		InvitationID string    `json:"invitation_id"`
		Email        string    `json:"email"`
		Role         Role      `json:"role"`
		InvitedBy    string    `json:"invited_by"`
		ExpiresAt    time.Time `json:"expires_at"`
	}
	memberJoined struct {
		AccountID    string `json:"account_id"`
		UserID       string `json:"user_id"`
		Role         Role   `json:"role"`
		InvitationID string `json:"invitation_id"`
	}
	memberRemoved struct {
		AccountID string `json:"account_id"`
		UserID    string `json:"user_id"`
		RemovedBy string `json:"removed_by"`
	}
	memberRoleChanged struct {
		AccountID string `json:"account_id"`
		UserID    string `json:"user_id"`
		OldRole   Role   `json:"old_role"`
		NewRole   Role   `json:"new_role"`
		ChangedBy string `json:"changed_by"`
	}
	staffChanged struct {
		UserID string `json:"user_id"`
	}
)

// UserCreated is the fact of a registration.
func UserCreated(u User) Event {
	return Event{EventUserCreated, u.ID, userCreated{u.ID, u.Email}}
}

// AccountCreated is the fact of a new account, personal or team.
func AccountCreated(a Account, ownerID string) Event {
	return Event{EventAccountCreated, a.ID, accountCreated{a.ID, a.Name, a.Slug, a.Personal, ownerID}}
}

// AccountUpdated is the fact of a rename.
func AccountUpdated(a Account) Event {
	return Event{EventAccountUpdated, a.ID, accountUpdated{a.ID, a.Name}}
}

// AccountDeleted is the fact of an account's removal by the user by.
// deleted_by came after the type was published (an optional field), so
// consumers meet events without it; identity always sends it.
func AccountDeleted(accountID, by string) Event {
	return Event{EventAccountDeleted, accountID, accountDeleted{accountID, by}}
}

// MemberInvited is the fact of an invitation being issued.
func MemberInvited(inv Invitation, invitedBy string) Event {
	return Event{EventMemberInvited, inv.AccountID, memberInvited{inv.AccountID, inv.ID, inv.Email, inv.Role, invitedBy, inv.ExpiresAt.UTC()}}
}

// MemberJoined is the fact of an accepted invitation.
func MemberJoined(m Membership, invitationID string) Event {
	return Event{EventMemberJoined, m.AccountID, memberJoined{m.AccountID, m.UserID, m.Role, invitationID}}
}

// MemberRemoved is the fact of a membership's end: removed by an admin
// or owner (by), left (by is userID), or an invitation declined (userID
// and by are the invitee, who never became a member).
func MemberRemoved(accountID, userID, by string) Event {
	return Event{EventMemberRemoved, accountID, memberRemoved{accountID, userID, by}}
}

// MemberRoleChanged is the fact of a role change.
func MemberRoleChanged(accountID, userID string, old, new Role, by string) Event {
	return Event{EventMemberRoleChanged, accountID, memberRoleChanged{accountID, userID, old, new, by}}
}

// StaffChanged is the fact of a user gaining (enabled) or losing staff
// authority.
func StaffChanged(userID string, staff bool) Event {
	typ := EventStaffDisabled
	if staff {
		typ = EventStaffEnabled
	}
	return Event{typ, userID, staffChanged{userID}}
}

// Events of MFA and API keys.
const (
	EventMFAEnabled    = "identity.mfa.enabled"
	EventMFADisabled   = "identity.mfa.disabled"
	EventAPIKeyCreated = "identity.api_key.created"
	EventAPIKeyRevoked = "identity.api_key.revoked"
)

type (
	mfaChanged struct {
		UserID string `json:"user_id"`
	}
	// apiKeyCreated carries no id of the key in data (platform.md): the
	// subject names the row.
	apiKeyCreated struct {
		AccountID string     `json:"account_id"`
		Name      string     `json:"name"`
		Scopes    []string   `json:"scopes"`
		CreatedBy string     `json:"created_by"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	apiKeyRevoked struct {
		AccountID string `json:"account_id"`
		RevokedBy string `json:"revoked_by"`
	}
)

// MFAChanged is the fact of TOTP confirmed (every rotation too) or turned off.
func MFAChanged(userID string, enabled bool) Event {
	typ := EventMFADisabled
	if enabled {
		typ = EventMFAEnabled
	}
	return Event{typ, userID, mfaChanged{userID}}
}

// APIKeyCreated is the fact of a key issued.
func APIKeyCreated(k APIKey) Event {
	return Event{EventAPIKeyCreated, k.ID, apiKeyCreated{k.AccountID, k.Name, k.Scopes, k.CreatedBy, k.ExpiresAt}}
}

// APIKeyRevoked is the fact of a key withdrawn by the user by (the
// creator losing admin revokes with by their own id's remover).
func APIKeyRevoked(keyID, accountID, by string) Event {
	return Event{EventAPIKeyRevoked, keyID, apiKeyRevoked{accountID, by}}
}
