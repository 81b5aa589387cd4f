package identity

import (
	"context"

	"github.com/platformco/platform/internal/errs"
)

// RequestEmailChange mails a confirmation link to the new address once the
// password is proven. An address another user holds gets the same answer
// and no mail, so the form cannot probe who is registered; so does a
// request past the mail limits (per new address and per user). Errors:
// CodeValidation (email invalid, password required), CodeInvalidCredentials
// (counted toward lockout), CodeLocked.
func (s *Service) RequestEmailChange(ctx context.Context, p Principal, email, password string) error {
	email = NormalizeEmail(email)
	var f errs.Fields
	checkEmail(&f, email)
	if password == "" {
		f.Add("password", RuleRequired)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return err
	}
	if err := s.checkPassword(ctx, p, password); err != nil {
		return err
	}
	if email == p.User.Email {
		return nil // nothing to change; answered like any other address
	}
	token, tok := tokenFor(PurposeEmailChange, email, EmailChangeTTL)
	mail, err := s.mail.Mail(TemplateEmailChangeConfirm, email, map[string]string{"link": s.link("/email/confirm", token)})
	if err != nil {
		return err
	}
	return s.store.IssueEmailChange(ctx, p.User.ID, tok, s.limited(mail, p.User.ID))
}

// ConfirmEmailChange moves the user to the address the token was sent to
// and notifies the old one. Errors: CodeNotFound, CodeTokenExpired,
// CodeTokenUsed, CodeConflict (the address was taken meanwhile).
func (s *Service) ConfirmEmailChange(ctx context.Context, token string) (User, error) {
	digest, err := tokenDigestOf(token)
	if err != nil {
		return User{}, err
	}
	return s.store.ConfirmEmailChange(ctx, digest, func(oldEmail, newEmail string) (OutgoingMail, error) {
		return s.mail.Mail(TemplateEmailChangedNotice, oldEmail, map[string]string{"new_email": newEmail})
	})
}
