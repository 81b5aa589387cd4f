package identity

import (
	"context"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// MinRole is the minimum role of each account operation (identity.md
// section 2). The HTTP adapter checks it before any handler runs.
const (
	MinRoleRead       = RoleMember // read the account, list members, use box routes
	MinRoleRename     = RoleAdmin
	MinRoleInvite     = RoleAdmin
	MinRoleRemove     = RoleAdmin
	MinRoleLeave      = RoleMember // remove oneself
	MinRoleChangeRole = RoleOwner
	MinRoleDelete     = RoleOwner
)

// Authorize checks that the principal is a member of the account it was
// authenticated for, with at least min. Errors: CodeNotFound (not a member,
// or no such account: the same answer), CodeForbidden (role too low).
func Authorize(p Principal, min Role) error {
	if p.Account == nil {
		return ErrAccountNotFound
	}
	if !p.Account.Role.AtLeast(min) {
		return ErrRoleForbidden
	}
	return nil
}

// ListAccounts returns a page of the caller's accounts and the cursor of
// the next page (nil on the last).
func (s *Service) ListAccounts(ctx context.Context, p Principal, page PageRequest) ([]Account, *Cursor, error) {
	return s.store.ListAccounts(ctx, p.User.ID, page)
}

// CreateAccount creates a team account owned by the caller; its slug is
// derived from the name. Errors: CodeValidation (name too_short, too_long,
// invalid), CodeConflict (the handle is taken; never suffixed).
func (s *Service) CreateAccount(ctx context.Context, p Principal, name string) (Account, error) {
	var f errs.Fields
	name = checkAccountName(&f, name)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return Account{}, err
	}
	return s.store.CreateAccount(ctx, p.User.ID, name, Slugify(name, SlugMax))
}

// RenameAccount renames the principal's account; the slug never changes.
// Errors: as Authorize (admin), CodeValidation (name), CodeConflict (the
// name derives a handle another account holds, as CreateAccount).
func (s *Service) RenameAccount(ctx context.Context, p Principal, name string) (Account, error) {
	if err := Authorize(p, MinRoleRename); err != nil {
		return Account{}, err
	}
	var f errs.Fields
	name = checkAccountName(&f, name)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return Account{}, err
	}
	return s.store.RenameAccount(ctx, p.Account.ID, name, p.User.ID)
}

// DeleteAccount removes the principal's account and everything scoped by
// it. Errors: as Authorize (owner), CodePersonalAccount.
func (s *Service) DeleteAccount(ctx context.Context, p Principal) error {
	if err := Authorize(p, MinRoleDelete); err != nil {
		return err
	}
	if p.Account.Personal {
		return ErrPersonalAccount
	}
	return s.store.DeleteAccount(ctx, p.Account.ID, p.User.ID)
}

// ListMembers returns a page of the principal's account's members and the
// cursor of the next page (nil on the last). Errors: as Authorize.
func (s *Service) ListMembers(ctx context.Context, p Principal, page PageRequest) ([]Membership, *Cursor, error) {
	if err := Authorize(p, MinRoleRead); err != nil {
		return nil, nil, err
	}
	return s.store.ListMembers(ctx, p.Account.ID, page)
}

// ChangeRole sets a member's role. Errors: as Authorize (owner),
// CodeValidation (role invalid; last_owner), CodeNotFound (no such member).
func (s *Service) ChangeRole(ctx context.Context, p Principal, userID string, role Role) (Membership, error) {
	if err := Authorize(p, MinRoleChangeRole); err != nil {
		return Membership{}, err
	}
	if !role.Valid() {
		return Membership{}, &errs.Error{Code: CodeValidation, Message: "role must be owner, admin or member", Fields: []errs.FieldError{{Field: "role", Code: RuleInvalid}}}
	}
	if !ids.Valid(userID) {
		return Membership{}, ErrMemberNotFound
	}
	return s.store.ChangeRole(ctx, p.Account.ID, userID, role, p.User.ID)
}

// RemoveMember ends a membership. Any member may end their own (leave
// the account) unless they are its last owner; ending another's needs an
// admin. Errors: as Authorize (member for oneself, else admin),
// CodeNotFound (no such member), CodeForbidden (an admin removing an
// owner), CodeValidation (last_owner on user_id).
func (s *Service) RemoveMember(ctx context.Context, p Principal, userID string) error {
	if err := Authorize(p, MinRoleLeave); err != nil {
		return err
	}
	if userID == p.User.ID {
		return s.store.LeaveAccount(ctx, p.Account.ID, userID)
	}
	if err := Authorize(p, MinRoleRemove); err != nil {
		return err
	}
	if !ids.Valid(userID) {
		return ErrMemberNotFound
	}
	return s.store.RemoveMember(ctx, p.Account.ID, userID, p.User.ID)
}

// Invite issues an invitation to the principal's account; the token is
// returned once. Errors: as Authorize (admin), CodeValidation (email
// required/invalid; role invalid — owner is not invitable).
func (s *Service) Invite(ctx context.Context, p Principal, email string, role Role) (Invitation, error) {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return Invitation{}, err
	}
	email = NormalizeEmail(email)
	var f errs.Fields
	checkEmail(&f, email)
	if role != RoleAdmin && role != RoleMember {
		f.Add("role", RuleInvalid)
	}
	if err := f.Err(CodeValidation, invalidFieldsMessage(f, map[string]string{
		"email": "email must be a valid address",
		"role":  "role must be admin or member",
	})); err != nil {
		return Invitation{}, err
	}
	token, digest := newToken()
	mail, err := s.invitationMail(p, email, token)
	if err != nil {
		return Invitation{}, err
	}
	inv, err := s.store.CreateInvitation(ctx, Invitation{AccountID: p.Account.ID, Email: email, Role: role}, digest, p.User.ID, mail)
	if err != nil {
		return Invitation{}, err
	}
	inv.Token = token
	return inv, nil
}

// AcceptInvitation makes the caller a member of the account the token
// names. Errors: CodeNotFound (wrong token), CodeInvitationExpired,
// CodeInvitationUsed, CodeConflict (already a member; the invitation stays
// usable), CodeValidation (token required).
func (s *Service) AcceptInvitation(ctx context.Context, p Principal, token string) (Membership, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return Membership{}, &errs.Error{Code: CodeValidation, Message: "token is required", Fields: []errs.FieldError{{Field: "token", Code: RuleRequired}}}
	}
	return s.store.AcceptInvitation(ctx, TokenDigest(token), p.User.ID)
}

// PreviewInvitation shows an invitation's holder what accepting would
// do, before they sign in or register. Errors: CodeValidation (token
// required), ErrInvitationUnknown, ErrInvitationUsed, ErrInvitationExpired.
func (s *Service) PreviewInvitation(ctx context.Context, token string) (InvitationPreview, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return InvitationPreview{}, &errs.Error{Code: CodeValidation, Message: "token is required", Fields: []errs.FieldError{{Field: "token", Code: RuleRequired}}}
	}
	return s.store.PreviewInvitation(ctx, TokenDigest(token))
}

// invalidFieldsMessage names the fields that failed in the detail, so the
// detail and the errors list never disagree; why says what each field
// must be.
func invalidFieldsMessage(f errs.Fields, why map[string]string) string {
	var parts []string
	for _, fe := range f {
		if w, ok := why[fe.Field]; ok {
			parts = append(parts, w)
		}
	}
	if len(parts) == 0 {
		return "the request has invalid fields"
	}
	return "the request has invalid fields: " + strings.Join(parts, "; ")
}
