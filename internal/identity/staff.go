package identity

import (
	"context"

	"github.com/platformco/platform/internal/ids"
)

// StaffStore is what the operator console's reads of any account need:
// they name an account without the reader being one of its members.
type StaffStore interface {
	// AccountByID returns the account with id; its Role is empty, since
	// the reader holds none. Errors: ErrAccountNotFound.
	AccountByID(ctx context.Context, id string) (Account, error)
}

// StaffAccount reads any account for staff. A malformed id is the same
// 404 as an unknown one. Errors: CodeForbidden (not staff), CodeNotFound.
func (s *Service) StaffAccount(ctx context.Context, p Principal, accountID string) (Account, error) {
	if !p.User.Staff {
		return Account{}, ErrNotStaff
	}
	if !ids.Valid(accountID) {
		return Account{}, ErrAccountNotFound
	}
	return s.store.AccountByID(ctx, accountID)
}

// StaffMembers returns a page of any account's memberships for staff,
// ordered as ListMembers orders them. An account without members does not
// exist, but the account is read first so that an unknown id is a 404
// rather than an empty list. Errors: as StaffAccount.
func (s *Service) StaffMembers(ctx context.Context, p Principal, accountID string, page PageRequest) ([]Membership, *Cursor, error) {
	if _, err := s.StaffAccount(ctx, p, accountID); err != nil {
		return nil, nil, err
	}
	return s.store.ListMembers(ctx, accountID, page)
}
