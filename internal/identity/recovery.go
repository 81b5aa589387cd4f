package identity

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
)

// RequestPasswordReset mails a reset link when a user has email, at most
// MailPerAddress in MailWindow. The answer is the same for any address,
// and so is the work: both paths spend one password hash, which outweighs
// the lookup and the write, so the time taken does not tell a registered
// address from another; past the limit the answer is the same again and
// nothing is sent.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	email = NormalizeEmail(email)
	var f errs.Fields
	checkEmail(&f, email)
	if err := f.Err(CodeValidation, "email must be a valid address"); err != nil {
		return err
	}
	token, tok := tokenFor(PurposePasswordReset, email, ResetTTL)
	if _, err := s.hasher.Hash(ctx, token); err != nil {
		return err
	}
	mail, err := s.mail.Mail(TemplatePasswordReset, email, map[string]string{"link": s.link("/reset", token)})
	if err != nil {
		return err
	}
	_, err = s.store.IssuePasswordReset(ctx, tok, s.limited(mail, ""))
	return err
}

// ConfirmPasswordReset sets a new password with a reset token, ending
// every session of the user. A user with MFA must also present code (a
// TOTP or recovery code): a reset link alone is only the mailbox, and the
// second factor must still stand between it and the account. The token is
// spent only together with the factor, so a missing or wrong code leaves
// the link usable. Errors: CodeValidation (token required, password
// too_short/too_long), CodeNotFound, CodeTokenExpired, CodeTokenUsed,
// CodeMFARequired (no code), CodeInvalidCode (counted toward the lockout),
// CodeLocked.
func (s *Service) ConfirmPasswordReset(ctx context.Context, token, password, code string) error {
	var f errs.Fields
	switch n := utf8.RuneCountInString(password); {
	case n < PasswordMin:
		f.Add("password", RuleTooShort)
	case n > PasswordMax:
		f.Add("password", RuleTooLong)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return err
	}
	digest, err := tokenDigestOf(token)
	if err != nil {
		return err
	}
	userID, err := s.store.PasswordResetUser(ctx, digest)
	if err != nil {
		return err
	}
	st, err := s.store.MFAState(ctx, userID)
	if err != nil {
		return err
	}
	var factor *Factor
	if st.Enabled {
		if strings.TrimSpace(code) == "" {
			return ErrMFARequired
		}
		fac, err := s.factorOf(ctx, userID, st, code)
		if err != nil {
			return err
		}
		factor = &fac
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return err
	}
	notice, err := s.mail.Mail(TemplatePasswordChangedNotice, "", map[string]string{})
	if err != nil {
		return err
	}
	err = s.store.ResetPassword(ctx, digest, hash, factor, notice)
	if errors.Is(err, ErrInvalidCode) {
		return s.wrongCode(ctx, userID)
	}
	return err
}
