// Package sqlstore is keyholder's persistence on PostgreSQL and SQLite,
// written once for both engines through sqldb. The schema carries the
// invariants: a credential's grant never changes and it is revoked at most
// once (a trigger), and the pull record is append-only (triggers), keeps the
// credentials it names (a restricting foreign key) and names exactly one
// of a credential and a downloaded file (a check).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements keyholder.Store over a sqldb.DB.
type Store struct{ db *sqldb.DB }

var _ keyholder.Store = (*Store)(nil)

// New returns a store over db, whose schema Migrations must have created.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// Ready implements keyholder.Store.
func (s *Store) Ready(ctx context.Context) error { return s.db.Ready(ctx) }

// Now implements keyholder.Store with the database's clock.
func (s *Store) Now() time.Time { return sqldb.Timestamp(s.db.Now()) }

const credentialCols = `id, password_digest, account_id, repository, version_range, created_at, expires_at, revoked_at`

func scanCredential(r sqldb.Row, c *keyholder.Credential) error {
	var revoked sqldb.NullTime
	err := r.Scan(&c.ID, &c.PasswordDigest, &c.AccountID, &c.Repository, &c.VersionRange,
		(*sqldb.TimeValue)(&c.CreatedAt), (*sqldb.TimeValue)(&c.ExpiresAt), &revoked)
	c.RevokedAt = revoked.Ptr()
	return err
}

// CreateCredential implements keyholder.Store.
func (s *Store) CreateCredential(ctx context.Context, c keyholder.Credential) (keyholder.Credential, error) {
	var out keyholder.Credential
	err := s.db.WriteRow(ctx, func(r sqldb.Row) error { return scanCredential(r, &out) },
		`INSERT INTO credentials (id, password_digest, account_id, repository, version_range, created_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+credentialCols,
		c.ID, c.PasswordDigest, c.AccountID, c.Repository, c.VersionRange,
		sqldb.Timestamp(c.CreatedAt), sqldb.Timestamp(c.ExpiresAt))
	return out, err
}

// Credential implements keyholder.Store.
func (s *Store) Credential(ctx context.Context, id string) (keyholder.Credential, error) {
	var c keyholder.Credential
	err := scanCredential(s.db.QueryRow(ctx, `SELECT `+credentialCols+` FROM credentials WHERE id = $1`, id), &c)
	if errors.Is(err, sql.ErrNoRows) {
		return c, errs.New(keyholder.CodeNotFound, "not found")
	}
	return c, err
}

// RevokeCredential implements keyholder.Store. The condition makes a
// second revocation change nothing (the trigger would refuse it).
func (s *Store) RevokeCredential(ctx context.Context, id string) error {
	_, err := s.db.Write(ctx, `UPDATE credentials SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`,
		id, sqldb.Timestamp(s.db.Now()))
	return err
}

// RecordPull implements keyholder.Store.
func (s *Store) RecordPull(ctx context.Context, p keyholder.Pull) error {
	_, err := s.db.Write(ctx,
		`INSERT INTO pulls (credential_id, account_id, repository, tag, digest, pulled_at, file) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		nullString(p.CredentialID), p.AccountID, p.Repository, p.Tag, p.Digest, sqldb.Timestamp(p.PulledAt), nullString(p.File))
	return err
}

// Pulls implements keyholder.Store.
func (s *Store) Pulls(ctx context.Context, accountID string, before int64, limit int) ([]keyholder.Pull, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.db.Query(ctx,
		`SELECT id, credential_id, account_id, repository, tag, digest, pulled_at, file FROM pulls
		 WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, accountID, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []keyholder.Pull{}
	for rows.Next() {
		var p keyholder.Pull
		var cred, file sql.NullString
		if err := rows.Scan(&p.ID, &cred, &p.AccountID, &p.Repository, &p.Tag, &p.Digest, (*sqldb.TimeValue)(&p.PulledAt), &file); err != nil {
			return nil, err
		}
		p.CredentialID, p.File = cred.String, file.String
		out = append(out, p)
	}
	return out, rows.Err()
}

// nullString stores "" as NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
