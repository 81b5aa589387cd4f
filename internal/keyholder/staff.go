package keyholder

import (
	"context"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
)

// StaffPulls returns any account's latest pulls, newest first, for the
// operator console: identity is asked whether the caller is staff, as box
// asks before every staff action. Keyholder keeps no accounts, so an
// account it never served has no pulls rather than a 404; a malformed id
// is the 404 of Pulls. Errors: CodeUnauthenticated, CodeForbidden (not
// staff), CodeNotFound, CodeUnavailable.
func (s *Service) StaffPulls(ctx context.Context, token, accountID string) ([]Pull, error) {
	if token == "" {
		return nil, errs.New(CodeUnauthenticated, "valid bearer token required")
	}
	if _, err := s.identity.OperatorMe(ctx, token); err != nil {
		return nil, err
	}
	if _, err := uuid.Parse(accountID); err != nil {
		return nil, errs.New(CodeNotFound, "not found")
	}
	return s.store.Pulls(ctx, accountID, MaxPulls)
}
