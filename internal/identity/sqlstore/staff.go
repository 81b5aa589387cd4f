package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/platformco/platform/internal/identity"
)

// AccountByID implements identity.StaffStore.
func (s *Store) AccountByID(ctx context.Context, id string) (identity.Account, error) {
	a, err := scanAccount(s.db.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts a WHERE a.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return identity.Account{}, identity.ErrAccountNotFound
	}
	return a, err
}
