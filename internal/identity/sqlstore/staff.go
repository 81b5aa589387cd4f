package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// AccountByID implements identity.StaffStore.
func (s *Store) AccountByID(ctx context.Context, id string) (identity.Account, error) {
	a, err := scanAccount(s.db.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts a WHERE a.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return identity.Account{}, identity.ErrAccountNotFound
	}
	return a, err
}

// StaffChanges implements identity.StaffStore. A first page starts after
// a key past every row: (created_at, id) descending.
func (s *Store) StaffChanges(ctx context.Context, page identity.PageRequest) ([]identity.StaffChange, *identity.Cursor, error) {
	after := identity.Cursor{At: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}
	if page.After != nil {
		after = *page.After
	}
	rows, err := s.db.Query(ctx, `
		SELECT sa.id, sa.user_id, COALESCE(u.email, ''), sa.action, sa.actor, sa.created_at
		FROM staff_audit sa LEFT JOIN users u ON u.id = sa.user_id
		WHERE (sa.created_at, sa.id) < ($1, $2)
		ORDER BY sa.created_at DESC, sa.id DESC
		LIMIT $3`, after.At, after.ID, page.Limit+1)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []identity.StaffChange{}
	for rows.Next() {
		var c identity.StaffChange
		if err := rows.Scan(&c.ID, &c.UserID, &c.Email, &c.Action, &c.Actor, (*sqldb.TimeValue)(&c.At)); err != nil {
			return nil, nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(out) > page.Limit {
		out = out[:page.Limit]
		last := out[len(out)-1]
		return out, &identity.Cursor{At: last.At, ID: last.ID}, nil
	}
	return out, nil, nil
}
