package identity

import (
	"context"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// ListSessions returns the caller's live sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, p Principal) ([]Session, error) {
	return s.store.ListSessions(ctx, p.User.ID)
}

// EndOtherSessions signs the caller out everywhere but the session making
// the request.
func (s *Service) EndOtherSessions(ctx context.Context, p Principal) error {
	return s.store.EndOtherSessions(ctx, p.User.ID, p.SessionID)
}

// ErrSessionNotFound answers ending a session that is not one of the
// caller's live sessions.
var ErrSessionNotFound = errs.New(CodeNotFound, "no such session of yours is live")

// EndSession signs the caller out of one of their sessions, named by its
// id (the list's); the current one is a sign-out. Errors:
// ErrSessionNotFound (unknown, another user's, or already ended).
func (s *Service) EndSession(ctx context.Context, p Principal, sessionID string) error {
	if _, ok := ids.Parse(sessionID); !ok {
		return ErrSessionNotFound
	}
	found, err := s.store.EndUserSession(ctx, p.User.ID, sessionID)
	if err != nil {
		return err
	}
	if !found {
		return ErrSessionNotFound
	}
	return nil
}

// ChangePassword replaces the caller's password, proven by the current
// one, and ends every other session. A wrong current password counts
// toward the lockout exactly as a failed sign-in does. Errors:
// CodeValidation (current_password required; new_password too_short,
// too_long), CodeInvalidCredentials (wrong current password), CodeLocked
// (with RetryAfter), CodeUnauthorized (the session ended meanwhile).
func (s *Service) ChangePassword(ctx context.Context, p Principal, current, next string) error {
	var f errs.Fields
	if current == "" {
		f.Add("current_password", RuleRequired)
	}
	switch n := utf8.RuneCountInString(next); {
	case n < PasswordMin:
		f.Add("new_password", RuleTooShort)
	case n > PasswordMax:
		f.Add("new_password", RuleTooLong)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return err
	}
	if err := s.checkPassword(ctx, p, current); err != nil {
		return err
	}
	hash, err := s.hasher.Hash(ctx, next)
	if err != nil {
		return err
	}
	notice, err := s.mail.Mail(TemplatePasswordChangedNotice, "", map[string]string{})
	if err != nil {
		return err
	}
	return s.store.ChangePassword(ctx, p.User.ID, p.SessionID, hash, notice)
}

// checkPassword proves a signed-in caller's password, counting a wrong one
// toward the lockout as a sign-in does.
func (s *Service) checkPassword(ctx context.Context, p Principal, password string) error {
	cred, err := s.store.Credentials(ctx, p.User.Email)
	if err != nil {
		return err
	}
	if cred.LockedUntil != nil && cred.LockedUntil.After(s.opts.Now()) {
		return LockedError(*cred.LockedUntil, s.opts.Now())
	}
	ok, _, err := s.hasher.Verify(ctx, password, cred.PasswordHash)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	counted, until, err := s.store.RecordLoginFailure(ctx, cred.UserID, s.opts.LockoutThreshold, s.opts.LockoutDuration)
	if err != nil {
		return err
	}
	if !counted {
		return LockedError(until, s.opts.Now())
	}
	return ErrInvalidCredentials
}

// SetAvatar sets the caller's avatar to the darkroom media mediaID, or
// removes it when mediaID is empty, and returns the caller as stored.
// Identity checks the id's form only: the client stored the image at
// darkroom first, with the caller's token. Errors: CodeValidation
// (avatar_media_id invalid), CodeUnauthorized (the user is gone).
func (s *Service) SetAvatar(ctx context.Context, p Principal, mediaID string) (User, error) {
	if mediaID != "" {
		id, ok := ids.Parse(mediaID)
		if !ok {
			var f errs.Fields
			f.Add("avatar_media_id", RuleInvalid)
			return User{}, f.Err(CodeValidation, "avatar_media_id must be a media id")
		}
		mediaID = id
	}
	return s.store.SetAvatar(ctx, p.User.ID, mediaID)
}
