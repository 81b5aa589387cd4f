package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// insertToken stores a one-time token's digest for userID.
func insertToken(ctx context.Context, tx *sqldb.Tx, userID string, tok identity.OneTimeToken) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO user_tokens (id, user_id, purpose, token_digest, email, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		uuid.NewString(), userID, tok.Purpose, tok.Digest, tok.Email, tx.Now, tx.Now.Add(tok.TTL))
	return err
}

// mailAllowed counts one request against each of m's limits and reports
// whether all of them still hold. Each count is one upsert of its row in
// mail_quota (a fixed window that restarts once Window has passed since it
// began), so concurrent requests are counted exactly on both engines.
// Requests past a limit are counted too; they send nothing.
func mailAllowed(ctx context.Context, tx *sqldb.Tx, m identity.OutgoingMail) (bool, error) {
	allowed := true
	for _, l := range m.Limits {
		var sent int
		err := tx.QueryRow(ctx, `
			INSERT INTO mail_quota (key_digest, window_start, sent) VALUES ($1, $2, 1)
			ON CONFLICT (key_digest) DO UPDATE SET
				sent         = CASE WHEN mail_quota.window_start <= $3 THEN 1 ELSE mail_quota.sent + 1 END,
				window_start = CASE WHEN mail_quota.window_start <= $3 THEN $2 ELSE mail_quota.window_start END
			RETURNING sent`, identity.TokenDigest("mail-quota:"+l.Key), tx.Now, tx.Now.Add(-l.Window)).Scan(&sent)
		if err != nil {
			return false, err
		}
		allowed = allowed && sent <= l.Max
	}
	return allowed, nil
}

// insertMailWithin queues m when mailAllowed says so, and otherwise
// drops it.
func insertMailWithin(ctx context.Context, tx *sqldb.Tx, m identity.OutgoingMail) error {
	ok, err := mailAllowed(ctx, tx, m)
	if !ok || err != nil {
		return err
	}
	return insertMail(ctx, tx, m)
}

// insertMail queues a mail for the relay, due at once.
func insertMail(ctx context.Context, tx *sqldb.Tx, m identity.OutgoingMail) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO mail_outbox (id, template, recipient, data_sealed, created_at, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, $5)`, m.ID, m.Template, m.To, m.Sealed, tx.Now)
	return err
}

// insertNotice queues a security notice to userID's current address,
// read in tx (the service seals it without knowing the address).
func insertNotice(ctx context.Context, tx *sqldb.Tx, userID string, notice identity.OutgoingMail) error {
	if err := tx.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`, userID).Scan(&notice.To); err != nil {
		return err
	}
	return insertMail(ctx, tx, notice)
}

// consumeToken spends the token with digest for purpose by one conditional
// UPDATE: of any number of concurrent uses exactly one matches the row
// while used_at is null. It returns the user and the token's address.
func consumeToken(ctx context.Context, tx *sqldb.Tx, digest, purpose string) (userID, email string, err error) {
	err = tx.QueryRow(ctx, `
		UPDATE user_tokens SET used_at = $3
		WHERE token_digest = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3
		RETURNING user_id, email`, digest, purpose, tx.Now).Scan(&userID, &email)
	if !errors.Is(err, sql.ErrNoRows) {
		return userID, email, err
	}
	var used sql.NullTime
	err = tx.QueryRow(ctx, `SELECT used_at FROM user_tokens WHERE token_digest = $1 AND purpose = $2`, digest, purpose).Scan(&used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", "", identity.ErrTokenUnknown
	case err != nil:
		return "", "", err
	case used.Valid:
		return "", "", identity.ErrTokenUsed
	default:
		return "", "", identity.ErrTokenExpired
	}
}

// endCredentials ends what a change of userID's password or address leaves
// stale, besides the sessions (which each caller ends its own way): every
// outstanding one-time token (a reset link, a verification or email
// change link, sent to whichever address, proves nothing once the
// password or the address it was issued against has changed), every open
// MFA sign-in challenge (proven by the old password), and every OIDC
// access and refresh token issued to a relying party (minted by sessions
// that are now ended, perhaps an intruder's).
func endCredentials(ctx context.Context, tx *sqldb.Tx, userID string) error {
	for _, q := range []string{
		`UPDATE user_tokens SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL`,
		`UPDATE mfa_challenges SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL`,
		`UPDATE oidc_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`,
	} {
		if _, err := tx.Exec(ctx, q, userID, tx.Now); err != nil {
			return err
		}
	}
	return nil
}

// revokeSessions ends every live session of userID, each with its event.
func revokeSessions(ctx context.Context, tx *sqldb.Tx, userID, reason string) error {
	rows, err := tx.Query(ctx, `
		UPDATE sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL AND expires_at > $2
		RETURNING id`, userID, tx.Now)
	if err != nil {
		return err
	}
	var ended []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ended = append(ended, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	events := make([]identity.Event, len(ended))
	for i, id := range ended {
		events[i] = identity.SessionRevoked(id, userID, reason)
	}
	return writeEvents(ctx, tx, events...)
}

func scanUser(ctx context.Context, tx *sqldb.Tx, userID string) (identity.User, error) {
	var (
		u        identity.User
		verified sql.NullTime
	)
	err := tx.QueryRow(ctx, `SELECT id, email, display_name, staff, created_at, verified_at FROM users WHERE id = $1`, userID).
		Scan(&u.ID, &u.Email, &u.DisplayName, &u.Staff, &u.CreatedAt, &verified)
	u.CreatedAt, u.EmailVerifiedAt = u.CreatedAt.UTC(), timePtr(verified)
	return u, err
}

// VerifyEmail implements identity.Store. A token for an address the user
// no longer holds is spent and verifies nothing.
func (s *Store) VerifyEmail(ctx context.Context, digest string) (identity.User, error) {
	var u identity.User
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		userID, email, err := consumeToken(ctx, tx, digest, identity.PurposeVerifyEmail)
		if err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `UPDATE users SET verified_at = $3, updated_at = $3 WHERE id = $1 AND email = $2 AND verified_at IS NULL`,
			userID, email, tx.Now)
		if err != nil {
			return err
		}
		if u, err = scanUser(ctx, tx, userID); err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return writeEvents(ctx, tx, identity.UserEmailVerified(u.ID, u.Email, tx.Now))
		}
		return nil
	})
	return u, err
}

// IssueVerification implements identity.Store. The resend limit is one
// conditional UPDATE of verification_sent_at, so concurrent resends send
// one mail.
func (s *Store) IssueVerification(ctx context.Context, userID string, tok identity.OneTimeToken, gap time.Duration, mail identity.OutgoingMail) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE users SET verification_sent_at = $2
			WHERE id = $1 AND verified_at IS NULL AND (verification_sent_at IS NULL OR verification_sent_at <= $3)`,
			userID, tx.Now, tx.Now.Add(-gap))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var verified, sent sql.NullTime
			if err := tx.QueryRow(ctx, `SELECT verified_at, verification_sent_at FROM users WHERE id = $1`, userID).Scan(&verified, &sent); err != nil {
				return err
			}
			if verified.Valid {
				return identity.ErrAlreadyVerified
			}
			return identity.RateLimitedError(sent.Time.Add(gap).Sub(tx.Now))
		}
		if ok, err := mailAllowed(ctx, tx, mail); !ok || err != nil {
			return err
		}
		if err := insertToken(ctx, tx, userID, tok); err != nil {
			return err
		}
		return insertMail(ctx, tx, mail)
	})
}

// IssuePasswordReset implements identity.Store.
func (s *Store) IssuePasswordReset(ctx context.Context, tok identity.OneTimeToken, mail identity.OutgoingMail) (bool, error) {
	found := false
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var userID string
		err := tx.QueryRow(ctx, `SELECT id FROM users WHERE email = $1 AND disabled_at IS NULL`, tok.Email).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if ok, err := mailAllowed(ctx, tx, mail); !ok || err != nil {
			return err
		}
		if err := insertToken(ctx, tx, userID, tok); err != nil {
			return err
		}
		return insertMail(ctx, tx, mail)
	})
	return found, err
}

// PasswordResetUser implements identity.Store.
func (s *Store) PasswordResetUser(ctx context.Context, digest string) (string, error) {
	var (
		userID string
		exp    time.Time
		used   sql.NullTime
	)
	err := s.db.QueryRow(ctx, `SELECT user_id, expires_at, used_at FROM user_tokens WHERE token_digest = $1 AND purpose = $2`,
		digest, identity.PurposePasswordReset).Scan(&userID, &exp, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", identity.ErrTokenUnknown
	case err != nil:
		return "", err
	case used.Valid:
		return "", identity.ErrTokenUsed
	case !exp.After(s.db.Now()):
		return "", identity.ErrTokenExpired
	}
	return userID, nil
}

// ResetPassword implements identity.Store; it also ends everything
// endCredentials names, so an older reset link, or a link sent to an
// address the user has since left, dies with the password it was issued
// against. Whether the user has MFA is read again after the token is
// spent, inside the transaction, so MFA turned on after the caller looked
// cannot be skipped.
func (s *Store) ResetPassword(ctx context.Context, digest, hash string, factor *identity.Factor, notice identity.OutgoingMail) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		userID, _, err := consumeToken(ctx, tx, digest, identity.PurposePasswordReset)
		if err != nil {
			return err
		}
		var mfa int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM mfa_totp WHERE user_id = $1 AND secret_sealed IS NOT NULL`, userID).Scan(&mfa); err != nil {
			return err
		}
		if mfa > 0 {
			if factor == nil {
				return identity.ErrMFARequired
			}
			if err := useFactor(ctx, tx, userID, *factor); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
			UPDATE users SET password_hash = $2, failed_logins = 0, locked_until = NULL, updated_at = $3 WHERE id = $1`,
			userID, hash, tx.Now); err != nil {
			return err
		}
		if err := endCredentials(ctx, tx, userID); err != nil {
			return err
		}
		if err := insertNotice(ctx, tx, userID, notice); err != nil {
			return err
		}
		return revokeSessions(ctx, tx, userID, identity.RevokedPasswordReset)
	})
}

// IssueEmailChange implements identity.Store.
func (s *Store) IssueEmailChange(ctx context.Context, userID string, tok identity.OneTimeToken, mail identity.OutgoingMail) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var taken int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE email = $1`, tok.Email).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return nil
		}
		if ok, err := mailAllowed(ctx, tx, mail); !ok || err != nil {
			return err
		}
		if err := insertToken(ctx, tx, userID, tok); err != nil {
			return err
		}
		return insertMail(ctx, tx, mail)
	})
}

// ConfirmEmailChange implements identity.Store. Everything endCredentials
// names dies with the old address: above all a reset link sent to it,
// which would otherwise let the old mailbox choose the password of the
// account now at the new address; and a verification link for it, or a
// second change request, must not act on the new one.
func (s *Store) ConfirmEmailChange(ctx context.Context, digest string, notice func(oldEmail, newEmail string) (identity.OutgoingMail, error)) (identity.User, error) {
	var u identity.User
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		userID, newEmail, err := consumeToken(ctx, tx, digest, identity.PurposeEmailChange)
		if err != nil {
			return err
		}
		var oldEmail string
		if err := tx.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`+tx.DB().ForUpdate(), userID).Scan(&oldEmail); err != nil {
			return err
		}
		var taken int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE email = $1 AND id <> $2`, newEmail, userID).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return identity.ErrEmailTaken
		}
		_, err = tx.Exec(ctx, `UPDATE users SET email = $2, verified_at = $3, updated_at = $3 WHERE id = $1`, userID, newEmail, tx.Now)
		if sqldb.IsUniqueViolation(err) {
			return identity.ErrEmailTaken
		}
		if err != nil {
			return err
		}
		if err := endCredentials(ctx, tx, userID); err != nil {
			return err
		}
		m, err := notice(oldEmail, newEmail)
		if err != nil {
			return err
		}
		if err := insertMail(ctx, tx, m); err != nil {
			return err
		}
		if u, err = scanUser(ctx, tx, userID); err != nil {
			return err
		}
		if err := writeEvents(ctx, tx, identity.UserEmailVerified(userID, newEmail, tx.Now)); err != nil {
			return err
		}
		return revokeSessions(ctx, tx, userID, identity.RevokedEmailChange)
	})
	return u, err
}

// mayAccept refuses an open invitation to a user who has not verified the
// invited address, before it is consumed; a token that is not open is
// left to the consuming UPDATE to explain.
func mayAccept(ctx context.Context, tx *sqldb.Tx, digest, userID string) error {
	var invited string
	err := tx.QueryRow(ctx, `
		SELECT email FROM invitations
		WHERE token_digest = $1 AND accepted_at IS NULL AND declined_at IS NULL AND revoked_at IS NULL AND expires_at > $2`,
		digest, tx.Now).Scan(&invited)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var (
		email    string
		verified sql.NullTime
	)
	if err := tx.QueryRow(ctx, `SELECT email, verified_at FROM users WHERE id = $1`, userID).Scan(&email, &verified); err != nil {
		return err
	}
	switch {
	case identity.NormalizeEmail(invited) != email:
		return identity.ErrInvitationEmailMismatch
	case !verified.Valid:
		return identity.ErrEmailNotVerified
	}
	return nil
}

// PendingMail implements identity.Store.
func (s *Store) PendingMail(ctx context.Context, limit int) ([]identity.OutgoingMail, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, template, recipient, data_sealed, created_at, attempts FROM mail_outbox
		WHERE sent_at IS NULL AND next_attempt_at <= $1
		ORDER BY next_attempt_at, created_at LIMIT $2`, sqldb.Timestamp(s.db.Now()), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []identity.OutgoingMail
	for rows.Next() {
		var m identity.OutgoingMail
		if err := rows.Scan(&m.ID, &m.Template, &m.To, &m.Sealed, &m.CreatedAt, &m.Attempts); err != nil {
			return nil, err
		}
		m.CreatedAt = m.CreatedAt.UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// MailSent implements identity.Store.
func (s *Store) MailSent(ctx context.Context, id string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mail_outbox SET sent_at = $2, data_sealed = NULL, attempts = attempts + 1, last_error = NULL
			WHERE id = $1 AND sent_at IS NULL`, id, tx.Now)
		return err
	})
}

// MailRetry implements identity.Store.
func (s *Store) MailRetry(ctx context.Context, id string, next time.Time, reason string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = $2, last_error = $3
			WHERE id = $1 AND sent_at IS NULL`, id, sqldb.Timestamp(next), reason)
		return err
	})
}
