// Package sqlstore is identity's SQL adapter, one implementation for both
// engines: the SQL is the same except where sqldb's dialect helpers say.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements identity.Store.
type Store struct {
	db *sqldb.DB
}

var _ identity.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// writeEvents appends events to the outbox in tx: the envelope id is fixed
// here and reused by every delivery attempt.
func writeEvents(ctx context.Context, tx *sqldb.Tx, events ...identity.Event) error {
	for _, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("outbox: encode %s: %w", e.Type, err)
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
			VALUES ($1, $2, 'identity', $3, $4, $5, $4, $4, $6)`,
			ids.New(), e.Type, e.Subject, tx.Now, string(data), traceparent(ctx))
		if err != nil {
			return fmt.Errorf("outbox: insert %s: %w", e.Type, err)
		}
	}
	return nil
}

// CreateUser implements identity.Store.
func (s *Store) CreateUser(ctx context.Context, in identity.NewUser) (identity.User, identity.Account, error) {
	u := identity.User{ID: uuid.NewString(), Email: in.Email, DisplayName: in.DisplayName}
	a := identity.Account{ID: uuid.NewString(), Name: personalName(in), Slug: in.PersonalSlug, Personal: true, Role: identity.RoleOwner}
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		u.CreatedAt, a.CreatedAt, a.UpdatedAt = tx.Now, tx.Now, tx.Now
		res, err := tx.Exec(ctx, `
			INSERT INTO users (id, email, display_name, password_hash, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (email) DO NOTHING`,
			u.ID, u.Email, u.DisplayName, in.PasswordHash, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrEmailTaken
		}
		if err := insertAccount(ctx, tx, a, u.ID); err != nil {
			return err
		}
		if in.Verification.Digest != "" {
			if err := insertToken(ctx, tx, u.ID, in.Verification); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE users SET verification_sent_at = $2 WHERE id = $1`, u.ID, tx.Now); err != nil {
				return err
			}
			if err := insertMail(ctx, tx, in.VerificationMail); err != nil {
				return err
			}
		}
		return writeEvents(ctx, tx, identity.UserCreated(u), identity.AccountCreated(a, u.ID))
	})
	return u, a, err
}

// personalName names a personal account after its user. An address may
// be longer than an account name (254 against 120 characters), so it is
// cut to fit.
func personalName(in identity.NewUser) string {
	if in.DisplayName != "" {
		return in.DisplayName
	}
	name := []rune(in.Email)
	if len(name) > identity.NameMax {
		name = name[:identity.NameMax]
	}
	return string(name)
}

// insertAccount creates an account and its owner's membership.
func insertAccount(ctx context.Context, tx *sqldb.Tx, a identity.Account, ownerID string) error {
	res, err := tx.Exec(ctx, `
		INSERT INTO accounts (id, name, slug, personal, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (slug) DO NOTHING`,
		a.ID, a.Name, a.Slug, a.Personal, tx.Now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return identity.ErrSlugTaken
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $3)`,
		a.ID, ownerID, tx.Now)
	return err
}

// Credentials implements identity.Store.
func (s *Store) Credentials(ctx context.Context, email string) (identity.Credentials, error) {
	var (
		c        identity.Credentials
		locked   sql.NullTime
		disabled sql.NullTime
	)
	err := s.db.QueryRow(ctx, `
		SELECT id, password_hash, locked_until, disabled_at FROM users WHERE email = $1`, email).
		Scan(&c.UserID, &c.PasswordHash, &locked, &disabled)
	if errors.Is(err, sql.ErrNoRows) {
		return identity.Credentials{}, identity.ErrUserNotFound
	}
	if err != nil {
		return identity.Credentials{}, err
	}
	c.LockedUntil = timePtr(locked)
	c.Disabled = disabled.Valid
	return c, nil
}

// RecordLoginFailure implements identity.Store. One conditional UPDATE
// counts the failure and, at the threshold, locks and restarts the count,
// so concurrent failures neither overshoot nor undercount: a failure that
// arrives once the user is locked matches no row and is not counted.
func (s *Store) RecordLoginFailure(ctx context.Context, userID string, threshold int, lockFor time.Duration) (bool, time.Time, error) {
	var (
		counted bool
		until   time.Time
	)
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE users SET
				locked_until  = CASE WHEN failed_logins + 1 >= $2 THEN $3 ELSE locked_until END,
				failed_logins = CASE WHEN failed_logins + 1 >= $2 THEN 0 ELSE failed_logins + 1 END
			WHERE id = $1 AND (locked_until IS NULL OR locked_until <= $4)`,
			userID, threshold, tx.Now.Add(lockFor), tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			counted = true
			return nil
		}
		var locked sql.NullTime
		if err := tx.QueryRow(ctx, `SELECT locked_until FROM users WHERE id = $1`, userID).Scan(&locked); err != nil {
			return err
		}
		until = locked.Time
		return nil
	})
	return counted, until, err
}

// addressDigest is the key of an address in login_failures.
func addressDigest(email string) string {
	return identity.TokenDigest("login-failures:" + email)
}

// AddressLockedUntil implements identity.Store.
func (s *Store) AddressLockedUntil(ctx context.Context, email string) (*time.Time, error) {
	var locked sql.NullTime
	err := s.db.QueryRow(ctx, `SELECT locked_until FROM login_failures WHERE address_digest = $1 AND locked_until > $2`,
		addressDigest(email), sqldb.Timestamp(s.db.Now())).Scan(&locked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return timePtr(locked), err
}

// RecordAddressFailure implements identity.Store with one upsert that
// counts as RecordLoginFailure's UPDATE does: the first failure inserts
// the row, and a failure while the address is locked matches nothing.
func (s *Store) RecordAddressFailure(ctx context.Context, email string, threshold int, lockFor time.Duration) (bool, time.Time, error) {
	var (
		counted bool
		until   time.Time
	)
	key := addressDigest(email)
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		// The first failure's row: counted, or locked at once when the
		// threshold is one.
		first, firstLock := 1, sql.NullTime{}
		if threshold <= 1 {
			first, firstLock = 0, sql.NullTime{Time: tx.Now.Add(lockFor), Valid: true}
		}
		res, err := tx.Exec(ctx, `
			INSERT INTO login_failures (address_digest, failed_logins, locked_until, updated_at) VALUES ($1, $5, $6, $4)
			ON CONFLICT (address_digest) DO UPDATE SET
				locked_until  = CASE WHEN login_failures.failed_logins + 1 >= $2 THEN $3 ELSE login_failures.locked_until END,
				failed_logins = CASE WHEN login_failures.failed_logins + 1 >= $2 THEN 0 ELSE login_failures.failed_logins + 1 END,
				updated_at    = $4
			WHERE login_failures.locked_until IS NULL OR login_failures.locked_until <= $4`,
			key, threshold, tx.Now.Add(lockFor), tx.Now, first, firstLock)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			counted = true
			return nil
		}
		var locked sql.NullTime
		if err := tx.QueryRow(ctx, `SELECT locked_until FROM login_failures WHERE address_digest = $1`, key).Scan(&locked); err != nil {
			return err
		}
		until = locked.Time
		return nil
	})
	return counted, until, err
}

// StartSession implements identity.Store.
func (s *Store) StartSession(ctx context.Context, userID string, ttl time.Duration, rehash string) (identity.Session, error) {
	var sess identity.Session
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		sess, err = startSession(ctx, tx, userID, ttl, rehash)
		return err
	})
	return sess, err
}

// startSession is StartSession inside tx (a sign-in with MFA opens its
// session in the transaction that consumes the code).
func startSession(ctx context.Context, tx *sqldb.Tx, userID string, ttl time.Duration, rehash string) (identity.Session, error) {
	sess := identity.Session{ID: uuid.NewString(), UserID: userID}
	err := func() error {
		sess.CreatedAt, sess.ExpiresAt = tx.Now, tx.Now.Add(ttl)
		res, err := tx.Exec(ctx, `
			UPDATE users SET failed_logins = 0, locked_until = NULL,
				password_hash = CASE WHEN $3 = '' THEN password_hash ELSE $3 END,
				updated_at = CASE WHEN $3 = '' THEN updated_at ELSE $2 END
			WHERE id = $1 AND disabled_at IS NULL AND (locked_until IS NULL OR locked_until <= $2)`,
			userID, tx.Now, rehash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Locked by concurrent failures since the password was checked,
			// or disabled meanwhile.
			var locked sql.NullTime
			if err := tx.QueryRow(ctx, `SELECT locked_until FROM users WHERE id = $1`, userID).Scan(&locked); err == nil && locked.Valid && locked.Time.After(tx.Now) {
				return identity.LockedError(locked.Time, tx.Now)
			}
			return identity.ErrUnauthorized
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO sessions (id, user_id, created_at, expires_at, last_seen_at) VALUES ($1, $2, $3, $4, $3)`,
			sess.ID, sess.UserID, sess.CreatedAt, sess.ExpiresAt)
		return err
	}()
	return sess, err
}

// EndSession implements identity.Store.
func (s *Store) EndSession(ctx context.Context, sessionID string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL`, sessionID, tx.Now)
		return err
	})
}

// Authenticate implements identity.Store: the whole hot path of an
// authenticated request (session, user, membership, account) is this one
// point read over primary keys, coalesced with others in flight on
// PostgreSQL (sqldb.ReadRow).
func (s *Store) Authenticate(ctx context.Context, sessionID, userID, accountID string) (identity.Principal, error) {
	now := sqldb.Timestamp(s.db.Now())
	var (
		p        identity.Principal
		lastSeen time.Time
		err      error
	)
	if accountID == "" {
		err = s.readSession(ctx, &p, &lastSeen, sessionID, userID, now)
	} else {
		err = s.readMembership(ctx, &p, &lastSeen, sessionID, userID, accountID, now)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return identity.Principal{}, identity.ErrUnauthorized
	}
	if err != nil {
		return identity.Principal{}, err
	}
	p.SessionID = sessionID
	p.User.CreatedAt = p.User.CreatedAt.UTC()
	if lastSeen.Before(now.Add(-identity.LastSeenGranularity)) {
		if err := s.touchSession(ctx, sessionID); err != nil {
			return identity.Principal{}, err
		}
	}
	return p, nil
}

// readSession reads the live session's user into p: the read behind
// every request that names no account (GET /v1/me). Its destinations are
// its own, so such a request allocates none of an account's.
func (s *Store) readSession(ctx context.Context, p *identity.Principal, lastSeen *time.Time, sessionID, userID string, now time.Time) error {
	// A pointer rather than sql.NullTime: pgx scans a NULL into it
	// directly, where a sql.Scanner costs a conversion through
	// database/sql's values (database/sql sets a pointer as well).
	var (
		verified *time.Time
		avatar   *string
	)
	u := &p.User
	err := s.db.ReadRow(ctx, `
		SELECT u.id, u.email, u.display_name, u.staff, u.created_at, s.last_seen_at, u.verified_at, u.avatar_media_id
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id = $1 AND s.user_id = $2 AND s.ended_at IS NULL AND s.expires_at > $3
		  AND u.disabled_at IS NULL`,
		sessionID, userID, now).Scan(&u.ID, &u.Email, &u.DisplayName, &u.Staff, &u.CreatedAt, lastSeen, &verified, &avatar)
	u.EmailVerifiedAt, u.AvatarMediaID = utcPtr(verified), deref(avatar)
	return err
}

// readMembership is readSession with the caller's membership of
// accountID and that account, into p.Account when it is a member.
func (s *Store) readMembership(ctx context.Context, p *identity.Principal, lastSeen *time.Time, sessionID, userID, accountID string, now time.Time) error {
	var (
		verified          *time.Time
		avatar            *string
		aID, aName, aSlug sql.NullString
		aPers             sql.NullBool
		aCreate, aUpdate  sql.NullTime
		role              sql.NullString
	)
	u := &p.User
	err := s.db.ReadRow(ctx, `
		SELECT u.id, u.email, u.display_name, u.staff, u.created_at, s.last_seen_at, u.verified_at, u.avatar_media_id,
		       a.id, a.name, a.slug, a.personal, a.created_at, a.updated_at, m.role
		FROM sessions s
		JOIN users u ON u.id = s.user_id
		LEFT JOIN memberships m ON m.user_id = s.user_id AND m.account_id = $4
		LEFT JOIN accounts a ON a.id = m.account_id
		WHERE s.id = $1 AND s.user_id = $2 AND s.ended_at IS NULL AND s.expires_at > $3
		  AND u.disabled_at IS NULL`,
		sessionID, userID, now, accountID).Scan(&u.ID, &u.Email, &u.DisplayName, &u.Staff, &u.CreatedAt, lastSeen, &verified, &avatar,
		&aID, &aName, &aSlug, &aPers, &aCreate, &aUpdate, &role)
	u.EmailVerifiedAt, u.AvatarMediaID = utcPtr(verified), deref(avatar)
	if err == nil && aID.Valid {
		p.Account = &identity.Account{
			ID: aID.String, Name: aName.String, Slug: aSlug.String, Personal: aPers.Bool,
			Role: identity.Role(role.String), CreatedAt: aCreate.Time.UTC(), UpdatedAt: aUpdate.Time.UTC(),
		}
	}
	return err
}

// deref is *s, "" for nil (a NULL column).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// utcPtr is t in UTC, nil for nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// SetStaff implements identity.Store. The UPDATE matches only a user
// whose flag changes, so of two concurrent identical changes one writes
// the audit row and the event and the other finds nothing to do.
func (s *Store) SetStaff(ctx context.Context, email string, staff bool, actor string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var userID string
		err := tx.QueryRow(ctx, `
			UPDATE users SET staff = $2, updated_at = $3 WHERE email = $1 AND staff <> $2
			RETURNING id`, email, staff, tx.Now).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			var exists int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM users WHERE email = $1`, email).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
				return identity.ErrUserNotFound
			} else if err != nil {
				return err
			}
			return nil // already so
		}
		if err != nil {
			return err
		}
		action := "disabled"
		if staff {
			action = "enabled"
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO staff_audit (id, user_id, action, actor, created_at) VALUES ($1, $2, $3, $4, $5)`,
			uuid.NewString(), userID, action, actor, tx.Now)
		if err != nil {
			return err
		}
		if !staff {
			// A publishing key acts on its creator's staff authority.
			if err := revokeStaffKeys(ctx, tx, userID, userID); err != nil {
				return err
			}
		}
		return writeEvents(ctx, tx, identity.StaffChanged(userID, staff))
	})
}

// SearchUsers implements identity.Store. The query's LIKE metacharacters
// are escaped so they match themselves. Each side is folded the way its
// column is: emails are stored lower-cased (NormalizeEmail, all of
// Unicode); display names are folded by the engine's lower(), which covers
// all of Unicode on PostgreSQL and ASCII only on SQLite, so the pattern for
// them is folded to match (a fully folded pattern never matches an
// unfolded "Ü" on SQLite, and an ASCII-folded one never matches PostgreSQL's
// "ü").
func (s *Store) SearchUsers(ctx context.Context, query string, limit int) ([]identity.StaffRecord, error) {
	emailPattern := "%" + escapeLike(strings.ToLower(query)) + "%"
	namePattern := emailPattern
	if s.db.Engine == sqldb.SQLite {
		namePattern = "%" + escapeLike(lower(query)) + "%"
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, email, display_name, disabled_at, verified_at, created_at
		FROM users
		WHERE email LIKE $1 ESCAPE '\' OR lower(display_name) LIKE $3 ESCAPE '\'
		ORDER BY email
		LIMIT $2`, emailPattern, limit, namePattern)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []identity.StaffRecord{}
	for rows.Next() {
		var (
			r                  identity.StaffRecord
			disabled, verified sql.NullTime
		)
		if err := rows.Scan(&r.ID, &r.Email, &r.DisplayName, &disabled, &verified, &r.CreatedAt); err != nil {
			return nil, err
		}
		r.DisabledAt, r.VerifiedAt, r.CreatedAt = timePtr(disabled), timePtr(verified), r.CreatedAt.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// SigningKeys implements identity.KeyStore.
func (s *Store) SigningKeys(ctx context.Context) ([]identity.SigningKey, error) {
	rows, err := s.db.Query(ctx, `
		SELECT kid, algorithm, public_key, private_key_sealed, created_at, withdrawn_at
		FROM signing_keys ORDER BY created_at DESC, kid DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []identity.SigningKey
	for rows.Next() {
		var (
			k         identity.SigningKey
			withdrawn sql.NullTime
		)
		if err := rows.Scan(&k.KID, &k.Algorithm, &k.Public, &k.Sealed, &k.CreatedAt, &withdrawn); err != nil {
			return nil, err
		}
		k.CreatedAt, k.WithdrawnAt = k.CreatedAt.UTC(), timePtr(withdrawn)
		out = append(out, k)
	}
	return out, rows.Err()
}

// InsertSigningKey implements identity.KeyStore.
func (s *Store) InsertSigningKey(ctx context.Context, k identity.SigningKey) (identity.SigningKey, error) {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		k.CreatedAt = tx.Now
		_, err := tx.Exec(ctx, `
			INSERT INTO signing_keys (kid, algorithm, public_key, private_key_sealed, created_at)
			VALUES ($1, $2, $3, $4, $5)`, k.KID, k.Algorithm, k.Public, k.Sealed, k.CreatedAt)
		return err
	})
	return k, err
}

// WithdrawSigningKey implements identity.KeyStore.
func (s *Store) WithdrawSigningKey(ctx context.Context, kid string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var signer string
		err := tx.QueryRow(ctx, `
			SELECT kid FROM signing_keys WHERE withdrawn_at IS NULL
			ORDER BY created_at DESC, kid DESC LIMIT 1`+tx.DB().ForUpdate()).Scan(&signer)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if signer == kid {
			return identity.ErrKeyIsSigner
		}
		res, err := tx.Exec(ctx, `UPDATE signing_keys SET withdrawn_at = $2 WHERE kid = $1 AND withdrawn_at IS NULL`, kid, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var exists int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM signing_keys WHERE kid = $1`, kid).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
				return identity.ErrKeyNotFound
			}
		}
		return nil
	})
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

// lower folds ASCII letters only, as SQLite's lower() does, so both
// engines compare the same way.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func escapeLike(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '%', '_':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
