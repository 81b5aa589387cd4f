package sqlstore

import (
	"context"
	"fmt"

	"github.com/platformco/platform/internal/sqldb"
)

// AccountDeletion is what RevokeAccount changed.
type AccountDeletion struct {
	// Revoked lists the entitlements it revoked, by id.
	Revoked []int64
	// Voided is how many outstanding capabilities it voided.
	Voided int64
}

// RevokeAccount ends what a deleted account held, inside tx (the event
// consumer's, which records the event's id in the same transaction): every
// active entitlement of the account is revoked with a revoke event whose
// actor is actor, and every capability of the account not yet redeemed is
// voided, so none redeems however it was issued; its active installations
// are revoked. An account holding
// nothing is no error; applied again it changes nothing.
func (s *Store) RevokeAccount(ctx context.Context, tx *sqldb.Tx, accountID, actor string) (AccountDeletion, error) {
	var del AccountDeletion
	rows, err := tx.Query(ctx, `
		UPDATE entitlements SET status = 'revoked', revoked_by = $2, revoked_at = $3
		WHERE account_id = $1 AND status = 'active'
		RETURNING id, product`, accountID, actor, tx.Now)
	if err != nil {
		return del, fmt.Errorf("revoke the account's entitlements: %w", err)
	}
	var products []string
	for rows.Next() {
		var id int64
		var product string
		if err := rows.Scan(&id, &product); err != nil {
			rows.Close()
			return del, fmt.Errorf("revoke the account's entitlements: %w", err)
		}
		del.Revoked = append(del.Revoked, id)
		products = append(products, product)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return del, fmt.Errorf("revoke the account's entitlements: %w", err)
	}
	for _, id := range del.Revoked {
		if err := appendEvent(ctx, tx, id, "revoke", actor); err != nil {
			return del, err
		}
	}
	if err := revokeInstallations(ctx, tx, "account_id = $1", accountID); err != nil {
		return del, err
	}
	res, err := tx.Exec(ctx, `UPDATE capabilities SET voided_at = $2
		WHERE account_id = $1 AND redeemed_at IS NULL AND voided_at IS NULL`, accountID, tx.Now)
	if err != nil {
		return del, fmt.Errorf("void the account's capabilities: %w", err)
	}
	if del.Voided, err = res.RowsAffected(); err != nil {
		return del, fmt.Errorf("void the account's capabilities: %w", err)
	}
	// Only hints: a capability insert re-checks the row it names.
	for _, p := range products {
		s.active.drop(accountID, p)
	}
	return del, nil
}
