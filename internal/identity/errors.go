package identity

import (
	"time"

	"github.com/platformco/platform/internal/errs"
)

// Error codes of the identity service. The HTTP adapter maps each to one
// status in one table.
const (
	CodeValidation        = "validation_failed"  // 422, with field errors
	CodeUnauthorized      = "unauthorized"       // 401
	CodeForbidden         = "forbidden"          // 403
	CodeNotFound          = "not_found"          // 404
	CodeConflict          = "conflict"           // 409
	CodeInvitationExpired = "invitation_expired" // 410
	CodeInvitationUsed    = "invitation_used"    // 410
	CodePersonalAccount   = "personal_account"   // 422
	CodeLocked            = "account_locked"     // 423, with RetryAfter
	// CodeInvalidCredentials refuses a signed-in caller's wrong current
	// password (403: the caller is authenticated, the proof is not).
	CodeInvalidCredentials = "invalid_credentials"
)

// Field rule codes carried in validation errors.
const (
	RuleRequired  = "required"
	RuleTooShort  = "too_short"
	RuleTooLong   = "too_long"
	RuleInvalid   = "invalid"
	RuleLastOwner = "last_owner"
	RuleTooLarge  = "too_large" // a number over its maximum
)

// The service's expected failures. The store returns the ones that only
// the database can decide (a taken address, a used invitation, the last
// owner), so the decision and its answer stay in one place.
var (
	ErrUnauthorized      = errs.New(CodeUnauthorized, "the credentials are missing, wrong or no longer valid")
	ErrAccountNotFound   = errs.New(CodeNotFound, "no such account is visible to you")
	ErrRoleForbidden     = errs.New(CodeForbidden, "your role in this account does not permit this action")
	ErrNotStaff          = errs.New(CodeForbidden, "platform staff only")
	ErrMemberNotFound    = errs.New(CodeNotFound, "no such member of this account")
	ErrInvitationUnknown = errs.New(CodeNotFound, "no such account is visible to you")
	ErrInvitationExpired = errs.New(CodeInvitationExpired, "this invitation has expired; ask for a new one")
	ErrInvitationUsed    = errs.New(CodeInvitationUsed, "this invitation has already been used")
	ErrAlreadyMember     = errs.New(CodeConflict, "you are already a member of this account")
	ErrEmailTaken        = errs.New(CodeConflict, "registration with this address cannot be completed")
	ErrSlugTaken         = errs.New(CodeConflict, "an account whose name derives the same handle already exists")
	ErrPersonalAccount   = errs.New(CodePersonalAccount, "a personal account cannot be deleted")
	ErrOwnerByAdmin      = errs.New(CodeForbidden, "an admin cannot remove an owner")
	ErrUserNotFound      = errs.New(CodeNotFound, "no user has that address")
	// ErrInvitationNotFound answers an admin naming an invitation that is
	// not open in the account (unknown, another account's, or already
	// accepted, declined or revoked).
	ErrInvitationNotFound = errs.New(CodeNotFound, "no such open invitation in this account")
	ErrInvalidCredentials = errs.New(CodeInvalidCredentials, "the current password is wrong")
	ErrLastOwnerDemoted   = &errs.Error{Code: CodeValidation, Message: "the last owner cannot be demoted", Fields: []errs.FieldError{{Field: "role", Code: RuleLastOwner}}}
	ErrLastOwnerRemoved   = &errs.Error{Code: CodeValidation, Message: "the last owner cannot be removed", Fields: []errs.FieldError{{Field: "user_id", Code: RuleLastOwner}}}
)

// LockedError is the answer to any sign-in while the user is locked.
func LockedError(until, now time.Time) error {
	wait := until.Sub(now)
	if wait < time.Second {
		wait = time.Second
	}
	return &errs.Error{Code: CodeLocked, Message: "too many failed sign-ins; try again later", RetryAfter: wait}
}
