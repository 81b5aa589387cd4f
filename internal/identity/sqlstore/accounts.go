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

const accountColumns = `a.id, a.name, a.slug, a.personal, a.created_at, a.updated_at`

func scanAccount(row interface{ Scan(...any) error }, extra ...any) (identity.Account, error) {
	var a identity.Account
	err := row.Scan(append([]any{&a.ID, &a.Name, &a.Slug, &a.Personal, &a.CreatedAt, &a.UpdatedAt}, extra...)...)
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, err
}

// ListAccounts implements identity.Store.
func (s *Store) ListAccounts(ctx context.Context, userID string, page identity.PageRequest) ([]identity.Account, *identity.Cursor, error) {
	after := start(page)
	rows, err := s.db.Query(ctx, `
		SELECT `+accountColumns+`, m.role
		FROM memberships m JOIN accounts a ON a.id = m.account_id
		WHERE m.user_id = $1 AND (a.created_at, a.id) > ($2, $3)
		ORDER BY a.created_at, a.id
		LIMIT $4`, userID, after.At, after.ID, page.Limit+1)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []identity.Account{}
	for rows.Next() {
		var role string
		a, err := scanAccount(rows, &role)
		if err != nil {
			return nil, nil, err
		}
		a.Role = identity.Role(role)
		out = append(out, a)
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

// StaffAccounts implements identity.Store.
func (s *Store) StaffAccounts(ctx context.Context, query string, page identity.PageRequest) ([]identity.Account, *identity.Cursor, error) {
	after := start(page)
	match := "TRUE"
	args := []any{after.At, after.ID, page.Limit + 1}
	if query != "" {
		pattern := "%" + escapeLike(strings.ToLower(query)) + "%"
		if s.db.Engine == sqldb.SQLite {
			pattern = "%" + escapeLike(lower(query)) + "%"
		}
		args = append(args, pattern)
		match = `(lower(a.name) LIKE $4 ESCAPE '\' OR a.slug LIKE $4 ESCAPE '\' OR EXISTS (
			SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.account_id = a.id AND u.email LIKE $4 ESCAPE '\'))`
	}
	rows, err := s.db.Query(ctx, `
		SELECT `+accountColumns+` FROM accounts a
		WHERE (a.created_at, a.id) > ($1, $2) AND `+match+`
		ORDER BY a.created_at, a.id
		LIMIT $3`, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []identity.Account{}
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
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

// start is where a page begins: after its cursor, or before everything.
func start(page identity.PageRequest) identity.Cursor {
	if page.After != nil {
		return *page.After
	}
	return identity.Cursor{At: time.Unix(0, 0).UTC(), ID: "00000000-0000-0000-0000-000000000000"}
}

// CreateAccount implements identity.Store.
func (s *Store) CreateAccount(ctx context.Context, ownerID, name, slug string) (identity.Account, error) {
	a := identity.Account{ID: uuid.NewString(), Name: name, Slug: slug, Role: identity.RoleOwner}
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		a.CreatedAt, a.UpdatedAt = tx.Now, tx.Now
		if err := insertAccount(ctx, tx, a, ownerID); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.AccountCreated(a, ownerID))
	})
	return a, err
}

// RenameAccount implements identity.Store.
func (s *Store) RenameAccount(ctx context.Context, accountID, name, by string) (identity.Account, error) {
	var a identity.Account
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		role, err := actorRole(ctx, tx, accountID, by, identity.MinRoleRename)
		if err != nil {
			return err
		}
		// The rule creating applies: a name whose handle another account
		// holds is taken, although renaming keeps this account's slug.
		var taken int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE slug = $1 AND id <> $2`,
			identity.Slugify(name, identity.SlugMax), accountID).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			return identity.ErrSlugTaken
		}
		a, err = scanAccount(tx.QueryRow(ctx, `
			UPDATE accounts SET name = $2, updated_at = $3 WHERE id = $1
			RETURNING id, name, slug, personal, created_at, updated_at`, accountID, name, tx.Now))
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrAccountNotFound
		}
		if err != nil {
			return err
		}
		a.Role = role
		return writeEvents(ctx, tx, identity.AccountUpdated(a))
	})
	return a, err
}

// DeleteAccount implements identity.Store. Memberships and invitations go
// with the account (ON DELETE CASCADE), in the same transaction.
func (s *Store) DeleteAccount(ctx context.Context, accountID, by string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var personal bool
		err := tx.QueryRow(ctx, `SELECT personal FROM accounts WHERE id = $1`+tx.DB().ForUpdate(), accountID).Scan(&personal)
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrAccountNotFound
		}
		if err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleDelete); err != nil {
			return err
		}
		if personal {
			return identity.ErrPersonalAccount
		}
		if _, err := tx.Exec(ctx, `DELETE FROM accounts WHERE id = $1`, accountID); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.AccountDeleted(accountID, by))
	})
}

// ListMembers implements identity.Store.
func (s *Store) ListMembers(ctx context.Context, accountID string, page identity.PageRequest) ([]identity.Membership, *identity.Cursor, error) {
	after := start(page)
	rows, err := s.db.Query(ctx, `
		SELECT m.account_id, m.user_id, u.email, m.role, m.created_at
		FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.account_id = $1 AND (m.created_at, m.user_id) > ($2, $3)
		ORDER BY m.created_at, m.user_id
		LIMIT $4`, accountID, after.At, after.ID, page.Limit+1)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []identity.Membership{}
	for rows.Next() {
		var (
			m    identity.Membership
			role string
		)
		if err := rows.Scan(&m.AccountID, &m.UserID, &m.Email, &role, &m.CreatedAt); err != nil {
			return nil, nil, err
		}
		m.Role, m.CreatedAt = identity.Role(role), m.CreatedAt.UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(out) > page.Limit {
		out = out[:page.Limit]
		last := out[len(out)-1]
		return out, &identity.Cursor{At: last.CreatedAt, ID: last.UserID}, nil
	}
	return out, nil, nil
}

// lockAccount serialises changes to one account's memberships: the owner
// invariant is checked and changed under this lock, so two owners demoting
// themselves at once cannot both see the other as the remaining owner.
// (On SQLite every write transaction already holds the database lock.)
func lockAccount(ctx context.Context, tx *sqldb.Tx, accountID string) error {
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM accounts WHERE id = $1`+tx.DB().ForUpdate(), accountID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return identity.ErrAccountNotFound
	}
	return err
}

// member reads one membership inside tx.
func member(ctx context.Context, tx *sqldb.Tx, accountID, userID string) (identity.Membership, error) {
	var (
		m    identity.Membership
		role string
	)
	err := tx.QueryRow(ctx, `
		SELECT m.account_id, m.user_id, u.email, m.role, m.created_at
		FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.account_id = $1 AND m.user_id = $2`, accountID, userID).
		Scan(&m.AccountID, &m.UserID, &m.Email, &role, &m.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return m, identity.ErrMemberNotFound
	}
	m.Role, m.CreatedAt = identity.Role(role), m.CreatedAt.UTC()
	return m, err
}

// actorRole re-reads the caller's role under the account lock and checks
// it against min. The principal's role was read before the transaction
// began; a caller demoted or removed since then must not still change
// memberships (a demoted owner could otherwise promote someone or remove
// the remaining owner). Errors: ErrAccountNotFound (no longer a member),
// ErrRoleForbidden.
func actorRole(ctx context.Context, tx *sqldb.Tx, accountID, userID string, min identity.Role) (identity.Role, error) {
	var role string
	err := tx.QueryRow(ctx, `SELECT role FROM memberships WHERE account_id = $1 AND user_id = $2`, accountID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", identity.ErrAccountNotFound
	}
	if err != nil {
		return "", err
	}
	if r := identity.Role(role); !r.AtLeast(min) {
		return "", identity.ErrRoleForbidden
	}
	return identity.Role(role), nil
}

func ownerCount(ctx context.Context, tx *sqldb.Tx, accountID string) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE account_id = $1 AND role = 'owner'`, accountID).Scan(&n)
	return n, err
}

// ChangeRole implements identity.Store.
func (s *Store) ChangeRole(ctx context.Context, accountID, userID string, role identity.Role, by string) (identity.Membership, error) {
	var m identity.Membership
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleChangeRole); err != nil {
			return err
		}
		var err error
		if m, err = member(ctx, tx, accountID, userID); err != nil {
			return err
		}
		if m.Role == role {
			return nil
		}
		if m.Role == identity.RoleOwner {
			n, err := ownerCount(ctx, tx, accountID)
			if err != nil {
				return err
			}
			if n <= 1 {
				return identity.ErrLastOwnerDemoted
			}
		}
		old := m.Role
		if _, err := tx.Exec(ctx, `UPDATE memberships SET role = $3 WHERE account_id = $1 AND user_id = $2`, accountID, userID, string(role)); err != nil {
			return err
		}
		m.Role = role
		if !role.AtLeast(identity.MinRoleAPIKeys) {
			if err := revokeCreatorKeys(ctx, tx, accountID, userID, by); err != nil {
				return err
			}
		}
		return writeEvents(ctx, tx, identity.MemberRoleChanged(accountID, userID, old, role, by))
	})
	return m, err
}

// RemoveMember implements identity.Store.
func (s *Store) RemoveMember(ctx context.Context, accountID, userID, by string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		byRole, err := actorRole(ctx, tx, accountID, by, identity.MinRoleRemove)
		if err != nil {
			return err
		}
		m, err := member(ctx, tx, accountID, userID)
		if err != nil {
			return err
		}
		if m.Role == identity.RoleOwner && byRole != identity.RoleOwner {
			return identity.ErrOwnerByAdmin
		}
		return dropMember(ctx, tx, m, by)
	})
}

// dropMember ends membership m, by's doing (m's user's own when they
// leave): an owner's only while another owner remains, which the caller's
// lockAccount keeps true until the commit. The API keys m's user created
// for the account are revoked with it.
func dropMember(ctx context.Context, tx *sqldb.Tx, m identity.Membership, by string) error {
	accountID := m.AccountID
	if m.Role == identity.RoleOwner {
		n, err := ownerCount(ctx, tx, accountID)
		if err != nil {
			return err
		}
		if n <= 1 {
			return identity.ErrLastOwnerRemoved
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, accountID, m.UserID); err != nil {
		return err
	}
	if err := revokeCreatorKeys(ctx, tx, accountID, m.UserID, by); err != nil {
		return err
	}
	return writeEvents(ctx, tx, identity.MemberRemoved(accountID, m.UserID, by))
}

// CreateInvitation implements identity.Store.
func (s *Store) CreateInvitation(ctx context.Context, inv identity.Invitation, digest, invitedBy string, mail identity.OutgoingMail) (identity.Invitation, error) {
	inv.ID = uuid.NewString()
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, inv.AccountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, inv.AccountID, invitedBy, identity.MinRoleInvite); err != nil {
			return err
		}
		inv.CreatedAt, inv.ExpiresAt = tx.Now, tx.Now.Add(identity.InvitationTTL)
		_, err := tx.Exec(ctx, `
			INSERT INTO invitations (id, account_id, email, role, token_digest, invited_by, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			inv.ID, inv.AccountID, inv.Email, string(inv.Role), digest, invitedBy, inv.CreatedAt, inv.ExpiresAt)
		if err != nil {
			return err
		}
		if err := insertMailWithin(ctx, tx, mail); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MemberInvited(inv, invitedBy))
	})
	return inv, err
}

// AcceptInvitation implements identity.Store. The invitation is consumed
// by one conditional UPDATE: of any number of concurrent accepts, exactly
// one matches the row while accepted_at is still null.
func (s *Store) AcceptInvitation(ctx context.Context, digest, userID string) (identity.Membership, error) {
	var m identity.Membership
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var (
			invID string
			role  string
		)
		if err := mayAccept(ctx, tx, digest, userID); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			UPDATE invitations SET accepted_at = $2, accepted_by = $3
			WHERE token_digest = $1 AND accepted_at IS NULL AND declined_at IS NULL AND revoked_at IS NULL
			  AND expires_at > $2
			RETURNING id, account_id, role`, digest, tx.Now, userID).Scan(&invID, &m.AccountID, &role)
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotAccepted(ctx, tx, digest)
		}
		if err != nil {
			return err
		}
		m.UserID, m.Role, m.CreatedAt = userID, identity.Role(role), tx.Now
		res, err := tx.Exec(ctx, `
			INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (account_id, user_id) DO NOTHING`, m.AccountID, userID, role, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Rolling back leaves the invitation usable by someone else.
			return identity.ErrAlreadyMember
		}
		if err := tx.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`, userID).Scan(&m.Email); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.MemberJoined(m, invID))
	})
	return m, err
}

// PreviewInvitation implements identity.Store.
func (s *Store) PreviewInvitation(ctx context.Context, digest string) (identity.InvitationPreview, error) {
	var (
		v    identity.InvitationPreview
		role string
	)
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		err := tx.QueryRow(ctx, `
			SELECT a.name, i.role, i.email, COALESCE(u.email, ''), i.expires_at
			FROM invitations i JOIN accounts a ON a.id = i.account_id LEFT JOIN users u ON u.id = i.invited_by
			WHERE i.token_digest = $1 AND i.accepted_at IS NULL AND i.declined_at IS NULL AND i.revoked_at IS NULL
			  AND i.expires_at > $2`, digest, tx.Now).Scan(&v.AccountName, &role, &v.Email, &v.InviterEmail, &v.ExpiresAt)
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotAccepted(ctx, tx, digest)
		}
		return err
	})
	v.Role = identity.Role(role)
	return v, err
}

// whyNotAccepted explains a failed accept or decline: unknown (or
// revoked: a withdrawn invitation is answered as if it never was), used
// (accepted or declined) or expired.
func whyNotAccepted(ctx context.Context, tx *sqldb.Tx, digest string) error {
	var accepted, declined, revoked sql.NullTime
	err := tx.QueryRow(ctx, `SELECT accepted_at, declined_at, revoked_at FROM invitations WHERE token_digest = $1`, digest).
		Scan(&accepted, &declined, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && revoked.Valid:
		return identity.ErrInvitationUnknown
	case err != nil:
		return err
	case accepted.Valid, declined.Valid:
		return identity.ErrInvitationUsed
	default:
		return identity.ErrInvitationExpired
	}
}
