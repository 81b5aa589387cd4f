package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// MFAState implements identity.MFAStore.
func (s *Store) MFAState(ctx context.Context, userID string) (identity.MFAState, error) {
	var (
		st      identity.MFAState
		enabled sql.NullTime
	)
	err := s.db.QueryRow(ctx, `
		SELECT secret_sealed, pending_sealed, enabled_at FROM mfa_totp WHERE user_id = $1`, userID).
		Scan(&st.Secret, &st.Pending, &enabled)
	if errors.Is(err, sql.ErrNoRows) {
		return identity.MFAState{}, nil
	}
	if err != nil {
		return identity.MFAState{}, err
	}
	st.EnabledAt = timePtr(enabled)
	st.Enabled = st.Secret != nil
	return st, nil
}

// LockedUntil implements identity.MFAStore.
func (s *Store) LockedUntil(ctx context.Context, userID string) (*time.Time, error) {
	var locked sql.NullTime
	err := s.db.QueryRow(ctx, `SELECT locked_until FROM users WHERE id = $1`, userID).Scan(&locked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, identity.ErrUnauthorized
	}
	return timePtr(locked), err
}

// EnrolTOTP implements identity.MFAStore.
func (s *Store) EnrolTOTP(ctx context.Context, userID string, pending []byte, digests []string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO mfa_totp (user_id, pending_sealed, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (user_id) DO UPDATE SET pending_sealed = excluded.pending_sealed, updated_at = excluded.updated_at`,
			userID, pending, tx.Now)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery_codes WHERE user_id = $1 AND pending`, userID); err != nil {
			return err
		}
		return insertRecoveryCodes(ctx, tx, userID, digests, true)
	})
}

func insertRecoveryCodes(ctx context.Context, tx *sqldb.Tx, userID string, digests []string, pending bool) error {
	for _, d := range digests {
		if _, err := tx.Exec(ctx, `
			INSERT INTO mfa_recovery_codes (user_id, digest, pending, created_at) VALUES ($1, $2, $3, $4)`,
			userID, d, pending, tx.Now); err != nil {
			return err
		}
	}
	return nil
}

// ConfirmTOTP implements identity.MFAStore. The replay guard is per
// secret: last_step is the active secret's, and the pending secret has
// none until this UPDATE, its first and only use, promotes it and starts
// its guard at step. (Comparing step with the active secret's last step
// refused a valid new code in the step of a sign-in with the old secret,
// and counted it toward the lockout.) The UPDATE matches only while the
// secret the code was checked against is still the pending one, so of
// concurrent confirmations exactly one wins, and an enrolment replacing
// it meanwhile is not confirmed by a code of the secret it replaced.
func (s *Store) ConfirmTOTP(ctx context.Context, userID string, pending []byte, step int64, notice identity.OutgoingMail) (time.Time, error) {
	var at time.Time
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		at = tx.Now
		res, err := tx.Exec(ctx, `
			UPDATE mfa_totp SET secret_sealed = pending_sealed, pending_sealed = NULL,
				last_step = $2, enabled_at = $3, updated_at = $3
			WHERE user_id = $1 AND pending_sealed = $4`,
			userID, step, tx.Now, pending)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var pending []byte
			err := tx.QueryRow(ctx, `SELECT pending_sealed FROM mfa_totp WHERE user_id = $1`, userID).Scan(&pending)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && pending == nil) {
				return identity.ErrMFANotEnrolled
			}
			if err != nil {
				return err
			}
			return identity.ErrInvalidCode
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery_codes WHERE user_id = $1 AND NOT pending`, userID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE mfa_recovery_codes SET pending = false WHERE user_id = $1`, userID); err != nil {
			return err
		}
		if err := insertMail(ctx, tx, notice); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MFAChanged(userID, true))
	})
	return at, err
}

// useFactor consumes one factor of an enabled user by one conditional
// UPDATE: a TOTP step only when later than the last accepted, a recovery
// code only while unused. Errors: ErrInvalidCode (lost the race, or a
// replay), ErrMFANotEnrolled.
func useFactor(ctx context.Context, tx *sqldb.Tx, userID string, f identity.Factor) error {
	var (
		res sql.Result
		err error
	)
	if f.RecoveryDigest != "" {
		res, err = tx.Exec(ctx, `
			UPDATE mfa_recovery_codes SET used_at = $3
			WHERE user_id = $1 AND digest = $2 AND NOT pending AND used_at IS NULL
			  AND EXISTS (SELECT 1 FROM mfa_totp t WHERE t.user_id = $1 AND t.secret_sealed IS NOT NULL)`,
			userID, f.RecoveryDigest, tx.Now)
	} else {
		res, err = tx.Exec(ctx, `
			UPDATE mfa_totp SET last_step = $2, updated_at = $3
			WHERE user_id = $1 AND secret_sealed IS NOT NULL AND last_step < $2`,
			userID, f.Step, tx.Now)
	}
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return identity.ErrInvalidCode
	}
	return nil
}

// ConsumeFactor implements identity.MFAStore.
func (s *Store) ConsumeFactor(ctx context.Context, userID string, f identity.Factor) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error { return useFactor(ctx, tx, userID, f) })
}

// DisableTOTP implements identity.MFAStore.
func (s *Store) DisableTOTP(ctx context.Context, userID string, f identity.Factor) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := useFactor(ctx, tx, userID, f); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery_codes WHERE user_id = $1`, userID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_totp WHERE user_id = $1`, userID); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MFAChanged(userID, false))
	})
}

// ReplaceRecoveryCodes implements identity.MFAStore.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID string, f identity.Factor, digests []string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := useFactor(ctx, tx, userID, f); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery_codes WHERE user_id = $1 AND NOT pending`, userID); err != nil {
			return err
		}
		return insertRecoveryCodes(ctx, tx, userID, digests, false)
	})
}

// CreateChallenge implements identity.MFAStore.
func (s *Store) CreateChallenge(ctx context.Context, userID, digest string, ttl time.Duration) (time.Time, error) {
	var exp time.Time
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		exp = tx.Now.Add(ttl)
		_, err := tx.Exec(ctx, `
			INSERT INTO mfa_challenges (digest, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)`,
			digest, userID, exp, tx.Now)
		return err
	})
	return exp, err
}

// ChallengeUser implements identity.MFAStore.
func (s *Store) ChallengeUser(ctx context.Context, digest string) (string, error) {
	var (
		userID string
		exp    time.Time
		used   sql.NullTime
	)
	err := s.db.QueryRow(ctx, `SELECT user_id, expires_at, used_at FROM mfa_challenges WHERE digest = $1`, digest).
		Scan(&userID, &exp, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", identity.ErrChallengeUnknown
	case err != nil:
		return "", err
	case used.Valid:
		return "", identity.ErrChallengeUsed
	case !exp.After(s.db.Now()):
		return "", identity.ErrChallengeExpired
	}
	return userID, nil
}

// CompleteChallenge implements identity.MFAStore: the factor, the
// challenge and the session in one transaction, so a code that loses a
// race leaves the challenge usable and a challenge is used once.
func (s *Store) CompleteChallenge(ctx context.Context, digest, userID string, f identity.Factor, ttl time.Duration) (identity.Session, error) {
	var sess identity.Session
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := useFactor(ctx, tx, userID, f); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `
			UPDATE mfa_challenges SET used_at = $3
			WHERE digest = $1 AND user_id = $2 AND used_at IS NULL AND expires_at > $3`,
			digest, userID, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrChallengeUsed
		}
		sess, err = startSession(ctx, tx, userID, ttl, "")
		return err
	})
	return sess, err
}
