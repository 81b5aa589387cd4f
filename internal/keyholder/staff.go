package keyholder

import (
	"context"

	"github.com/platformco/platform/internal/errs"
)

// StaffPulls returns a page of any account's pulls, as Pulls does, for the
// operator console; httpapi has confirmed the caller as staff with
// identity. Keyholder keeps no accounts, so an account it never served
// has no pulls rather than a 404; a malformed id is the 404 of Pulls.
// Errors: CodeNotFound.
func (s *Service) StaffPulls(ctx context.Context, _ Staff, accountID, cursor string) (PullPage, error) {
	if !ValidAccountID(accountID) {
		return PullPage{}, errs.New(CodeNotFound, "not found")
	}
	return s.pullPage(ctx, accountID, cursor)
}
