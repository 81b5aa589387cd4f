package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// CreateAPIKey implements identity.APIKeyStore.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.APIKey, digest, by string) (identity.APIKey, error) {
	k.ID = uuid.NewString()
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, k.AccountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, k.AccountID, by, identity.MinRoleAPIKeys); err != nil {
			return err
		}
		k.CreatedAt = tx.Now
		_, err := tx.Exec(ctx, `
			INSERT INTO api_keys (id, account_id, name, scopes, digest, created_by, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			k.ID, k.AccountID, k.Name, strings.Join(k.Scopes, " "), digest, k.CreatedBy, tx.Now, nullTime(k.ExpiresAt))
		if err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.APIKeyCreated(k))
	})
	return k, err
}

const apiKeyColumns = `k.id, k.account_id, k.name, k.scopes, k.created_by, k.created_at, k.expires_at, k.last_used_at`

func scanAPIKey(row interface{ Scan(...any) error }, extra ...any) (identity.APIKey, error) {
	var (
		k         identity.APIKey
		scopes    string
		exp, used sql.NullTime
	)
	dest := append([]any{&k.ID, &k.AccountID, &k.Name, &scopes, &k.CreatedBy, &k.CreatedAt, &exp, &used}, extra...)
	if err := row.Scan(dest...); err != nil {
		return identity.APIKey{}, err
	}
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt = k.CreatedAt.UTC(), timePtr(exp), timePtr(used)
	return k, nil
}

// ListAPIKeys implements identity.APIKeyStore.
func (s *Store) ListAPIKeys(ctx context.Context, accountID string) ([]identity.APIKey, error) {
	return s.queryAPIKeys(ctx, `
		SELECT `+apiKeyColumns+` FROM api_keys k
		WHERE k.account_id = $1 AND k.revoked_at IS NULL AND k.scopes <> $2
		ORDER BY k.created_at, k.id`, accountID, identity.ScopeReleasesPublish)
}

// queryAPIKeys runs a SELECT of apiKeyColumns and scans every key.
func (s *Store) queryAPIKeys(ctx context.Context, q string, args ...any) ([]identity.APIKey, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []identity.APIKey{}
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey implements identity.APIKeyStore.
func (s *Store) RevokeAPIKey(ctx context.Context, accountID, keyID, by string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleAPIKeys); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `
			UPDATE api_keys SET revoked_at = $3
			WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL AND scopes <> $4`,
			keyID, accountID, tx.Now, identity.ScopeReleasesPublish)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrAPIKeyNotFound
		}
		return writeEvents(ctx, tx, identity.APIKeyRevoked(keyID, accountID, by))
	})
}

// StaffAPIKeys implements identity.StaffAPIKeyStore. A publishing key's
// scopes column holds exactly identity.ScopeReleasesPublish: the account
// routes filter on that value, and no account key can carry it.
func (s *Store) StaffAPIKeys(ctx context.Context) ([]identity.APIKey, error) {
	return s.queryAPIKeys(ctx, `
		SELECT `+apiKeyColumns+` FROM api_keys k
		WHERE k.scopes = $1 AND k.revoked_at IS NULL
		ORDER BY k.created_at, k.id`, identity.ScopeReleasesPublish)
}

// RevokeStaffAPIKey implements identity.StaffAPIKeyStore.
func (s *Store) RevokeStaffAPIKey(ctx context.Context, keyID, by string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var accountID string
		err := tx.QueryRow(ctx, `
			UPDATE api_keys SET revoked_at = $2
			WHERE id = $1 AND scopes = $3 AND revoked_at IS NULL
			RETURNING account_id`, keyID, tx.Now, identity.ScopeReleasesPublish).Scan(&accountID)
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrAPIKeyNotFound
		}
		if err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.APIKeyRevoked(keyID, accountID, by))
	})
}

// revokeStaffKeys revokes the publishing keys userID created when they
// stop being staff, in the caller's transaction, one event each.
func revokeStaffKeys(ctx context.Context, tx *sqldb.Tx, userID, by string) error {
	rows, err := tx.Query(ctx, `
		UPDATE api_keys SET revoked_at = $3
		WHERE created_by = $1 AND scopes = $2 AND revoked_at IS NULL
		RETURNING id, account_id`, userID, identity.ScopeReleasesPublish, tx.Now)
	if err != nil {
		return err
	}
	var revoked [][2]string
	for rows.Next() {
		var id, account string
		if err := rows.Scan(&id, &account); err != nil {
			rows.Close()
			return err
		}
		revoked = append(revoked, [2]string{id, account})
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range revoked {
		if err := writeEvents(ctx, tx, identity.APIKeyRevoked(k[0], k[1], by)); err != nil {
			return err
		}
	}
	return nil
}

// revokeCreatorKeys revokes userID's keys for accountID when they stop
// being an admin of it (removed, left or demoted), in the caller's
// transaction, one event each.
func revokeCreatorKeys(ctx context.Context, tx *sqldb.Tx, accountID, userID, by string) error {
	rows, err := tx.Query(ctx, `
		UPDATE api_keys SET revoked_at = $3
		WHERE account_id = $1 AND created_by = $2 AND revoked_at IS NULL
		RETURNING id`, accountID, userID, tx.Now)
	if err != nil {
		return err
	}
	var revoked []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		revoked = append(revoked, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range revoked {
		if err := writeEvents(ctx, tx, identity.APIKeyRevoked(id, accountID, by)); err != nil {
			return err
		}
	}
	return nil
}

// AuthenticateAPIKey implements identity.APIKeyStore: one point read over
// the digest's unique index, joined to the account (sqldb.ReadRow).
func (s *Store) AuthenticateAPIKey(ctx context.Context, digest string) (identity.APIKey, identity.Account, error) {
	now := sqldb.Timestamp(s.db.Now())
	var a identity.Account
	k, err := scanAPIKey(s.db.ReadRow(ctx, `
		SELECT `+apiKeyColumns+`, a.id, a.name, a.slug, a.personal, a.created_at, a.updated_at
		FROM api_keys k JOIN accounts a ON a.id = k.account_id
		WHERE k.digest = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)`,
		digest, now), &a.ID, &a.Name, &a.Slug, &a.Personal, &a.CreatedAt, &a.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return identity.APIKey{}, identity.Account{}, identity.ErrUnauthorized
	}
	if err != nil {
		return identity.APIKey{}, identity.Account{}, err
	}
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	if k.LastUsedAt == nil || k.LastUsedAt.Before(now.Add(-identity.APIKeyUseGranularity)) {
		err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
			_, err := tx.Exec(ctx, `
				UPDATE api_keys SET last_used_at = $2
				WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
				k.ID, tx.Now, tx.Now.Add(-identity.APIKeyUseGranularity))
			return err
		})
		if err != nil {
			return identity.APIKey{}, identity.Account{}, err
		}
		t := now
		k.LastUsedAt = &t
	}
	return k, a, nil
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: *t, Valid: true}
}
