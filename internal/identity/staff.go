package identity

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// StaffStore is what the operator console's reads of any account need:
// they name an account without the reader being one of its members.
type StaffStore interface {
	// AccountByID returns the account with id; its Role is empty, since
	// the reader holds none. Errors: ErrAccountNotFound.
	AccountByID(ctx context.Context, id string) (Account, error)
	// StaffAccounts returns a page of every account, oldest first, or,
	// with query, of those whose name or handle contains it or that have
	// a member whose address contains it (literally, case-insensitively).
	StaffAccounts(ctx context.Context, query string, page PageRequest) ([]Account, *Cursor, error)
	// StaffChanges returns a page of the trail of staff changes, newest
	// first: a page's Cursor asks for the older rows after it.
	StaffChanges(ctx context.Context, page PageRequest) ([]StaffChange, *Cursor, error)
}

// StaffChange is one row of the append-only trail of staff changes:
// Action is "enabled" or "disabled", Actor who ran `identity staff`, and
// Email the user's address now ("" once the user is gone).
type StaffChange struct {
	ID     string
	UserID string
	Email  string
	Action string
	Actor  string
	At     time.Time
}

// StaffChanges is the console's read of the trail of staff changes.
// Errors: ErrNotStaff.
func (s *Service) StaffChanges(ctx context.Context, p Principal, page PageRequest) ([]StaffChange, *Cursor, error) {
	if !p.User.Staff {
		return nil, nil, ErrNotStaff
	}
	return s.store.StaffChanges(ctx, page)
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

// StaffAccounts is the console's list of accounts, every account or
// those matching query (a name, a handle or a member's address). Errors:
// ErrNotStaff, CodeValidation (query too_short).
func (s *Service) StaffAccounts(ctx context.Context, p Principal, query string, page PageRequest) ([]Account, *Cursor, error) {
	if !p.User.Staff {
		return nil, nil, ErrNotStaff
	}
	query = strings.TrimSpace(query)
	if query != "" && utf8.RuneCountInString(query) < SearchMinQuery {
		return nil, nil, &errs.Error{Code: CodeValidation, Message: "query must be at least 2 characters",
			Fields: []errs.FieldError{{Field: "query", Code: RuleTooShort}}}
	}
	return s.store.StaffAccounts(ctx, query, page)
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
