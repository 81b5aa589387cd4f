package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/sqldb"
)

// Preferences implements courier.Store.
func (s *Store) Preferences(ctx context.Context, userID string) (courier.Preferences, error) {
	p := courier.DefaultPreferences()
	err := s.db.QueryRow(ctx, `
		SELECT product_updates, release_announcements, account_activity FROM preferences WHERE user_id = $1`,
		userID).Scan(&p.ProductUpdates, &p.ReleaseAnnouncements, &p.AccountActivity)
	if errors.Is(err, sql.ErrNoRows) {
		return courier.DefaultPreferences(), nil
	}
	return p, err
}

// UpdatePreferences implements courier.Store: the row is read and written
// in one transaction, locked on PostgreSQL, so concurrent patches of
// different categories both land. An address that another row still holds
// (a user whose email changed) moves to this user.
func (s *Store) UpdatePreferences(ctx context.Context, userID, address string, patch courier.PreferencesPatch) (courier.Preferences, error) {
	var out courier.Preferences
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := claimAddress(ctx, tx, userID, address); err != nil {
			return err
		}
		p := courier.DefaultPreferences()
		if err := tx.QueryRow(ctx, `
			SELECT product_updates, release_announcements, account_activity FROM preferences WHERE user_id = $1`+tx.DB().ForUpdate(),
			userID).Scan(&p.ProductUpdates, &p.ReleaseAnnouncements, &p.AccountActivity); err != nil {
			return err
		}
		out = patch.Apply(p)
		_, err := tx.Exec(ctx, `
			UPDATE preferences SET product_updates = $2, release_announcements = $3,
				account_activity = $4, updated_at = $5
			WHERE user_id = $1`, userID, out.ProductUpdates, out.ReleaseAnnouncements, out.AccountActivity, tx.Now)
		return err
	})
	return out, err
}

// claimAddress makes sure userID has a preferences row and records
// address as theirs, in tx: an address that another row still holds (a
// user whose email changed) moves to this user.
func claimAddress(ctx context.Context, tx *sqldb.Tx, userID, address string) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO preferences (user_id, updated_at) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING`,
		userID, tx.Now); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE preferences SET address = NULL WHERE address = $1 AND user_id <> $2`, address, userID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE preferences SET address = $2 WHERE user_id = $1`, userID, address)
	return err
}
