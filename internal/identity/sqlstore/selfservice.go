package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// touchSession moves a session's last_seen_at to now. The condition makes
// concurrent requests of one session write it once per minute between
// them, not once each.
func (s *Store) touchSession(ctx context.Context, sessionID string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $3`,
			sessionID, tx.Now, tx.Now.Add(-identity.LastSeenGranularity))
		return err
	})
}

// ListSessions implements identity.Store.
func (s *Store) ListSessions(ctx context.Context, userID string) ([]identity.Session, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, user_id, created_at, expires_at, last_seen_at FROM sessions
		WHERE user_id = $1 AND ended_at IS NULL AND expires_at > $2
		ORDER BY created_at DESC, id DESC`, userID, sqldb.Timestamp(s.db.Now()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []identity.Session{}
	for rows.Next() {
		var x identity.Session
		if err := rows.Scan(&x.ID, &x.UserID, &x.CreatedAt, &x.ExpiresAt, &x.LastSeenAt); err != nil {
			return nil, err
		}
		x.CreatedAt, x.ExpiresAt, x.LastSeenAt = x.CreatedAt.UTC(), x.ExpiresAt.UTC(), x.LastSeenAt.UTC()
		out = append(out, x)
	}
	return out, rows.Err()
}

// EndOtherSessions implements identity.Store.
func (s *Store) EndOtherSessions(ctx context.Context, userID, keep string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		return endOtherSessions(ctx, tx, userID, keep)
	})
}

// EndUserSession implements identity.Store.
func (s *Store) EndUserSession(ctx context.Context, userID, sessionID string) (bool, error) {
	var found bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $3 WHERE id = $1 AND user_id = $2 AND ended_at IS NULL`,
			sessionID, userID, tx.Now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		found = n > 0
		return err
	})
	return found, err
}

func endOtherSessions(ctx context.Context, tx *sqldb.Tx, userID, keep string) error {
	_, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $3 WHERE user_id = $1 AND id <> $2 AND ended_at IS NULL`,
		userID, keep, tx.Now)
	return err
}

// ChangePassword implements identity.Store. The hash changes only while
// the user is unlocked and not disabled, and while the session that proved
// the current password is live: a password checked just before a logout or
// a lockout does not change anything. Everything endCredentials names ends
// with the old password.
func (s *Store) ChangePassword(ctx context.Context, userID, keep, hash string, notice identity.OutgoingMail) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE users SET password_hash = $3, failed_logins = 0, locked_until = NULL, updated_at = $2
			WHERE id = $1 AND disabled_at IS NULL AND (locked_until IS NULL OR locked_until <= $2)
			  AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = $4 AND s.user_id = $1 AND s.ended_at IS NULL AND s.expires_at > $2)`,
			userID, tx.Now, hash, keep)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var locked sql.NullTime
			if err := tx.QueryRow(ctx, `SELECT locked_until FROM users WHERE id = $1`, userID).Scan(&locked); err == nil && locked.Valid && locked.Time.After(tx.Now) {
				return identity.LockedError(locked.Time, tx.Now)
			}
			return identity.ErrUnauthorized
		}
		if err := endCredentials(ctx, tx, userID); err != nil {
			return err
		}
		if err := insertNotice(ctx, tx, userID, notice); err != nil {
			return err
		}
		return endOtherSessions(ctx, tx, userID, keep)
	})
}

// LeaveAccount implements identity.Store. The owner count is read and the
// membership removed under the account's lock (lockAccount), so owners
// leaving at once cannot all see another owner remaining.
func (s *Store) LeaveAccount(ctx context.Context, accountID, userID string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		m, err := member(ctx, tx, accountID, userID)
		if errors.Is(err, identity.ErrMemberNotFound) {
			return identity.ErrAccountNotFound // no longer a member: the account is no longer visible
		}
		if err != nil {
			return err
		}
		return dropMember(ctx, tx, m, userID)
	})
}

// openInvitation is the condition of an invitation that can still be
// accepted, declined, revoked or resent (expiry aside).
const openInvitation = `accepted_at IS NULL AND declined_at IS NULL AND revoked_at IS NULL`

// DeclineInvitation implements identity.Store: like AcceptInvitation, one
// conditional UPDATE ends the invitation, so of an accept and a decline
// racing, exactly one happens.
func (s *Store) DeclineInvitation(ctx context.Context, digest, userID string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var accountID string
		err := tx.QueryRow(ctx, `
			UPDATE invitations SET declined_at = $2
			WHERE token_digest = $1 AND `+openInvitation+` AND expires_at > $2
			RETURNING account_id`, digest, tx.Now).Scan(&accountID)
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotAccepted(ctx, tx, digest)
		}
		if err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MemberRemoved(accountID, userID, userID))
	})
}

// ListInvitations implements identity.Store.
func (s *Store) ListInvitations(ctx context.Context, accountID string, page identity.PageRequest) ([]identity.Invitation, *identity.Cursor, error) {
	after := start(page)
	rows, err := s.db.Query(ctx, `
		SELECT id, account_id, email, role, created_at, expires_at FROM invitations
		WHERE account_id = $1 AND `+openInvitation+` AND (created_at, id) > ($2, $3)
		ORDER BY created_at, id
		LIMIT $4`, accountID, after.At, after.ID, page.Limit+1)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []identity.Invitation{}
	for rows.Next() {
		var (
			inv  identity.Invitation
			role string
		)
		if err := rows.Scan(&inv.ID, &inv.AccountID, &inv.Email, &role, &inv.CreatedAt, &inv.ExpiresAt); err != nil {
			return nil, nil, err
		}
		inv.Role, inv.CreatedAt, inv.ExpiresAt = identity.Role(role), inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
		out = append(out, inv)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(out) > page.Limit {
		out = out[:page.Limit]
		last := out[len(out)-1]
		return out, &identity.Cursor{At: last.CreatedAt, ID: last.ID}, nil
	}
	return out, nil, nil
}

// RevokeInvitation implements identity.Store.
func (s *Store) RevokeInvitation(ctx context.Context, accountID, invitationID, by string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		// The invitation's row is locked before the account's, the order an
		// accept takes them in (its membership insert waits on the account),
		// so the two cannot deadlock on PostgreSQL. The role is checked
		// before a miss is reported, so a non-admin learns nothing.
		res, err := tx.Exec(ctx, `
			UPDATE invitations SET revoked_at = $3 WHERE id = $1 AND account_id = $2 AND `+openInvitation,
			invitationID, accountID, tx.Now)
		if err != nil {
			return err
		}
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleInvite); err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrInvitationNotFound
		}
		return nil
	})
}

// ResendInvitation implements identity.Store. Replacing the digest in the
// same conditional UPDATE that checks the invitation is open means the old
// token is dead the moment the new one exists, and an accept racing the
// resend either consumed the invitation first (the resend then finds
// nothing) or finds the old digest gone.
func (s *Store) ResendInvitation(ctx context.Context, accountID, invitationID, digest, by string, mail func(identity.Invitation) (identity.OutgoingMail, error)) (identity.Invitation, error) {
	var inv identity.Invitation
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		// Invitation row first, then the account, as RevokeInvitation.
		var role string
		err := tx.QueryRow(ctx, `
			UPDATE invitations SET token_digest = $3, expires_at = $4
			WHERE id = $1 AND account_id = $2 AND `+openInvitation+`
			RETURNING id, account_id, email, role, created_at, expires_at`,
			invitationID, accountID, digest, tx.Now.Add(identity.InvitationTTL)).
			Scan(&inv.ID, &inv.AccountID, &inv.Email, &role, &inv.CreatedAt, &inv.ExpiresAt)
		missing := errors.Is(err, sql.ErrNoRows)
		if err != nil && !missing {
			return err
		}
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleInvite); err != nil {
			return err
		}
		if missing {
			return identity.ErrInvitationNotFound
		}
		inv.Role, inv.CreatedAt, inv.ExpiresAt = identity.Role(role), inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
		m, err := mail(inv)
		if err != nil {
			return err
		}
		if err := insertMailWithin(ctx, tx, m); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MemberInvited(inv, by))
	})
	return inv, err
}

// SetAvatar implements identity.Store.
func (s *Store) SetAvatar(ctx context.Context, userID, mediaID string) (identity.User, error) {
	var (
		u        identity.User
		verified sql.NullTime
		avatar   *string
	)
	var media any
	if mediaID != "" {
		media = mediaID
	}
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE users SET avatar_media_id = $2, updated_at = $3 WHERE id = $1 AND disabled_at IS NULL`,
			userID, media, tx.Now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return identity.ErrUnauthorized
		}
		return tx.QueryRow(ctx, `SELECT id, email, display_name, staff, created_at, verified_at, avatar_media_id FROM users WHERE id = $1`, userID).
			Scan(&u.ID, &u.Email, &u.DisplayName, &u.Staff, &u.CreatedAt, &verified, &avatar)
	})
	u.CreatedAt, u.EmailVerifiedAt, u.AvatarMediaID = u.CreatedAt.UTC(), timePtr(verified), deref(avatar)
	return u, err
}
