package identity

import (
	"context"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// ListInvitations returns a page of the principal's account's open
// invitations (without tokens) and the cursor of the next page (nil on the
// last). Errors: as Authorize (admin).
func (s *Service) ListInvitations(ctx context.Context, p Principal, page PageRequest) ([]Invitation, *Cursor, error) {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return nil, nil, err
	}
	return s.store.ListInvitations(ctx, p.Account.ID, page)
}

// RevokeInvitation withdraws an open invitation; its token stops working.
// Errors: as Authorize (admin), CodeNotFound (no such open invitation).
func (s *Service) RevokeInvitation(ctx context.Context, p Principal, invitationID string) error {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return err
	}
	if !ids.Valid(invitationID) {
		return ErrInvitationNotFound
	}
	return s.store.RevokeInvitation(ctx, p.Account.ID, invitationID, p.User.ID)
}

// ResendInvitation issues an open invitation again: a new token, returned
// once, and a new expiry; the old token stops working. Errors: as
// Authorize (admin), CodeNotFound (no such open invitation).
func (s *Service) ResendInvitation(ctx context.Context, p Principal, invitationID string) (Invitation, error) {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return Invitation{}, err
	}
	if !ids.Valid(invitationID) {
		return Invitation{}, ErrInvitationNotFound
	}
	token, digest := newToken()
	inv, err := s.store.ResendInvitation(ctx, p.Account.ID, invitationID, digest, p.User.ID, func(inv Invitation) (OutgoingMail, error) {
		return s.invitationMail(p, inv.Email, token)
	})
	if err != nil {
		return Invitation{}, err
	}
	inv.Token = token
	return inv, nil
}

// DeclineInvitation is the invitee's refusal: the invitation ends and
// cannot be accepted. Like accepting it needs a signed-in caller, whom the
// event names. Errors: CodeNotFound (wrong token), CodeInvitationExpired,
// CodeInvitationUsed, CodeValidation (token required).
func (s *Service) DeclineInvitation(ctx context.Context, p Principal, token string) error {
	token = strings.TrimSpace(token)
	if token == "" {
		return &errs.Error{Code: CodeValidation, Message: "token is required", Fields: []errs.FieldError{{Field: "token", Code: RuleRequired}}}
	}
	return s.store.DeclineInvitation(ctx, TokenDigest(token), p.User.ID)
}

// invitationMail is the invitation's message to its address, within the
// mail limits per address and per inviting user: past them the invitation
// is made (or resent) and its token returned as usual, but no mail goes.
func (s *Service) invitationMail(p Principal, email, token string) (OutgoingMail, error) {
	m, err := s.mail.Mail(TemplateInvitation, email, map[string]string{
		"link":          s.link("/invitations/accept", token),
		"account_name":  p.Account.Name,
		"inviter_email": p.User.Email,
	})
	return s.limited(m, p.User.ID), err
}
