package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

var _ identity.OIDCStore = (*Store)(nil)

func jsonList(xs []string) string {
	if xs == nil {
		xs = []string{}
	}
	b, _ := json.Marshal(xs)
	return string(b)
}

func parseList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

const oidcClientColumns = `id, account_id, name, public, redirect_uris, grant_types, scopes, created_by, created_at, revoked_at`

func scanOIDCClient(row interface{ Scan(...any) error }, extra ...any) (identity.OIDCClient, error) {
	dest, finish := oidcClientDest()
	err := row.Scan(append(dest, extra...)...)
	return finish(), err
}

// oidcClientDest is where a row's oidcClientColumns are scanned to, and
// the client they make once scanned.
func oidcClientDest() ([]any, func() identity.OIDCClient) {
	var (
		c                      identity.OIDCClient
		redirects, grants, scp string
		revoked                sql.NullTime
	)
	return []any{&c.ID, &c.AccountID, &c.Name, &c.Public, &redirects, &grants, &scp, &c.CreatedBy, &c.CreatedAt, &revoked}, func() identity.OIDCClient {
		c.RedirectURIs, c.GrantTypes, c.Scopes = parseList(redirects), parseList(grants), parseList(scp)
		c.CreatedAt, c.RevokedAt = c.CreatedAt.UTC(), timePtr(revoked)
		return c
	}
}

// qualified is a column list with each column prefixed by alias.
func qualified(alias, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// CreateOIDCClient implements identity.OIDCStore.
func (s *Store) CreateOIDCClient(ctx context.Context, c identity.OIDCClient, secretDigest string) (identity.OIDCClient, error) {
	c.ID = uuid.NewString()
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, c.AccountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, c.AccountID, c.CreatedBy, identity.MinRoleInvite); err != nil {
			return err
		}
		c.CreatedAt = tx.Now
		var digest any
		if secretDigest != "" {
			digest = secretDigest
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oidc_clients (id, account_id, name, secret_digest, public, redirect_uris, grant_types, scopes, created_by, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.ID, c.AccountID, c.Name, digest, c.Public, jsonList(c.RedirectURIs), jsonList(c.GrantTypes), jsonList(c.Scopes), c.CreatedBy, tx.Now); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.OIDCClientCreated(c))
	})
	return c, err
}

// ListOIDCClients implements identity.OIDCStore.
func (s *Store) ListOIDCClients(ctx context.Context, accountID string) ([]identity.OIDCClient, error) {
	rows, err := s.db.Query(ctx, `SELECT `+oidcClientColumns+` FROM oidc_clients WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []identity.OIDCClient{}
	for rows.Next() {
		c, err := scanOIDCClient(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// RevokeOIDCClient implements identity.OIDCStore. Consents to the client
// are forgotten with its tokens. The client row is
// locked first, so a token issued concurrently (IssueOIDCTokens takes the
// same lock) is either revoked here or refused there.
func (s *Store) RevokeOIDCClient(ctx context.Context, accountID, clientID, by string) error {
	if !ids.Valid(clientID) {
		return identity.ErrOIDCClientNotFound
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := actorRole(ctx, tx, accountID, by, identity.MinRoleInvite); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `UPDATE oidc_clients SET revoked_at = $1 WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL`, tx.Now, clientID, accountID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrOIDCClientNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE oidc_tokens SET revoked_at = $1 WHERE client_id = $2 AND revoked_at IS NULL`, tx.Now, clientID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM oidc_consents WHERE client_id = $1`, clientID); err != nil {
			return err
		}
		return writeEvents(ctx, tx, identity.OIDCClientRevoked(accountID, clientID, by))
	})
}

// OIDCClient implements identity.OIDCStore.
func (s *Store) OIDCClient(ctx context.Context, clientID string) (identity.OIDCClient, string, error) {
	if !ids.Valid(clientID) {
		return identity.OIDCClient{}, "", identity.ErrOIDCClientNotFound
	}
	var digest sql.NullString
	c, err := scanOIDCClient(s.db.QueryRow(ctx, `SELECT `+oidcClientColumns+`, secret_digest FROM oidc_clients WHERE id = $1`, clientID), &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return identity.OIDCClient{}, "", identity.ErrOIDCClientNotFound
	}
	return c, digest.String, err
}

// CreateOIDCAuthRequest implements identity.OIDCStore.
func (s *Store) CreateOIDCAuthRequest(ctx context.Context, r identity.OIDCAuthRequest) error {
	var maxAge any
	if r.MaxAge != nil {
		maxAge = int64(*r.MaxAge)
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO oidc_auth_requests (id, client_id, redirect_uri, scopes, state, nonce, response_type, response_mode, code_challenge, prompt, max_age, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.ID, r.ClientID, r.RedirectURI, jsonList(r.Scopes), r.State, r.Nonce, r.ResponseType, r.ResponseMode, r.CodeChallenge, r.Prompt, maxAge, tx.Now, tx.Now.Add(identity.OIDCAuthRequestTTL))
		return err
	})
}

const oidcAuthRequestColumns = `id, client_id, redirect_uri, scopes, state, nonce, response_type, response_mode, code_challenge, user_id, session_id, auth_time, done, prompt, max_age, created_at, expires_at`

func scanOIDCAuthRequest(row interface{ Scan(...any) error }, extra ...any) (identity.OIDCAuthRequest, error) {
	var (
		r             identity.OIDCAuthRequest
		scopes        string
		user, session sql.NullString
		authTime      sql.NullTime
		maxAge        sql.NullInt64
	)
	err := row.Scan(append([]any{&r.ID, &r.ClientID, &r.RedirectURI, &scopes, &r.State, &r.Nonce, &r.ResponseType, &r.ResponseMode, &r.CodeChallenge,
		&user, &session, &authTime, &r.Done, &r.Prompt, &maxAge, &r.CreatedAt, &r.ExpiresAt}, extra...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return r, identity.ErrOIDCGrantUnknown
	}
	if maxAge.Valid && maxAge.Int64 >= 0 {
		v := uint(maxAge.Int64)
		r.MaxAge = &v
	}
	r.Scopes, r.UserID, r.SessionID = parseList(scopes), user.String, session.String
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	if authTime.Valid {
		r.AuthTime = authTime.Time.UTC()
	}
	return r, err
}

// OIDCAuthRequest implements identity.OIDCStore.
func (s *Store) OIDCAuthRequest(ctx context.Context, id string) (identity.OIDCAuthRequest, error) {
	return scanOIDCAuthRequest(s.db.QueryRow(ctx, `
		SELECT `+oidcAuthRequestColumns+` FROM oidc_auth_requests
		WHERE id = $1 AND code_digest IS NULL AND expires_at > $2`, id, sqldb.Timestamp(s.db.Now())))
}

// SignInOIDCAuthRequest implements identity.OIDCStore.
func (s *Store) SignInOIDCAuthRequest(ctx context.Context, id, userID, sessionID string, authTime time.Time) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE oidc_auth_requests SET user_id = $1, session_id = $2, auth_time = $3
			WHERE id = $4 AND user_id IS NULL AND NOT done AND code_digest IS NULL AND expires_at > $5`,
			userID, sessionID, sqldb.Timestamp(authTime), id, tx.Now)
		return affected(res, err)
	})
}

// OIDCSessionSignedIn implements identity.OIDCStore.
func (s *Store) OIDCSessionSignedIn(ctx context.Context, sessionID string) (time.Time, error) {
	var at time.Time
	if !ids.Valid(sessionID) {
		return at, identity.ErrUnauthorized
	}
	err := s.db.QueryRow(ctx, `SELECT created_at FROM sessions WHERE id = $1 AND ended_at IS NULL AND expires_at > $2`,
		sessionID, sqldb.Timestamp(s.db.Now())).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return at, identity.ErrUnauthorized
	}
	return at.UTC(), err
}

// ConsentOIDCAuthRequest implements identity.OIDCStore.
func (s *Store) ConsentOIDCAuthRequest(ctx context.Context, id, userID string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var clientID, scopes string
		err := tx.QueryRow(ctx, `
			UPDATE oidc_auth_requests SET done = TRUE
			WHERE id = $1 AND user_id = $2 AND NOT done AND expires_at > $3
			RETURNING client_id, scopes`, id, userID, tx.Now).Scan(&clientID, &scopes)
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrOIDCGrantUnknown
		}
		if err != nil {
			return err
		}
		return grantOIDCConsent(ctx, tx, userID, clientID, parseList(scopes))
	})
}

// grantOIDCConsent adds scopes to the user's consent for clientID. The
// primary key (user_id, client_id) keeps one row: the insert that loses a
// race does nothing (on PostgreSQL it waits for the winner's commit), and
// the row, locked, then takes the union of its scopes and these.
func grantOIDCConsent(ctx context.Context, tx *sqldb.Tx, userID, clientID string, scopes []string) error {
	res, err := tx.Exec(ctx, `
		INSERT INTO oidc_consents (user_id, client_id, scopes, granted_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (user_id, client_id) DO NOTHING`, userID, clientID, jsonList(scopes), tx.Now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var held string
	if err := tx.QueryRow(ctx, `SELECT scopes FROM oidc_consents WHERE user_id = $1 AND client_id = $2`+tx.DB().ForUpdate(),
		userID, clientID).Scan(&held); err != nil {
		return err
	}
	have := parseList(held)
	union := have
	for _, sc := range scopes {
		if !slices.Contains(union, sc) {
			union = append(union, sc)
		}
	}
	if len(union) == len(have) {
		return nil
	}
	_, err = tx.Exec(ctx, `UPDATE oidc_consents SET scopes = $1, updated_at = $2 WHERE user_id = $3 AND client_id = $4`,
		jsonList(union), tx.Now, userID, clientID)
	return err
}

// ResumeOIDCAuthRequest implements identity.OIDCStore. The consent row is
// locked while the request is bound, so a withdrawal either waits for the
// request to be done (and then stops its code) or commits first and the
// request finds no consent.
func (s *Store) ResumeOIDCAuthRequest(ctx context.Context, id, userID, sessionID string, authTime time.Time) error {
	if !ids.Valid(id) || !ids.Valid(userID) {
		return identity.ErrOIDCGrantUnknown
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var clientID, scopes string
		err := tx.QueryRow(ctx, `
			SELECT client_id, scopes FROM oidc_auth_requests
			WHERE id = $1 AND user_id IS NULL AND NOT done AND code_digest IS NULL AND expires_at > $2`, id, tx.Now).Scan(&clientID, &scopes)
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrOIDCGrantUnknown
		}
		if err != nil {
			return err
		}
		var held string
		err = tx.QueryRow(ctx, `SELECT scopes FROM oidc_consents WHERE user_id = $1 AND client_id = $2`+tx.DB().ForUpdate(), userID, clientID).Scan(&held)
		if errors.Is(err, sql.ErrNoRows) {
			return identity.ErrOIDCConsentRequired
		}
		if err != nil {
			return err
		}
		if !(identity.OIDCConsent{Scopes: parseList(held)}).Covers(parseList(scopes)) {
			return identity.ErrOIDCConsentRequired
		}
		res, err := tx.Exec(ctx, `
			UPDATE oidc_auth_requests SET user_id = $1, session_id = $2, auth_time = $3, done = TRUE
			WHERE id = $4 AND user_id IS NULL AND NOT done AND code_digest IS NULL AND expires_at > $5`,
			userID, sessionID, sqldb.Timestamp(authTime), id, tx.Now)
		return affected(res, err)
	})
}

const oidcConsentQuery = `
	SELECT k.client_id, c.name, k.scopes, k.granted_at, k.updated_at
	FROM oidc_consents k JOIN oidc_clients c ON c.id = k.client_id
	WHERE k.user_id = $1 AND c.revoked_at IS NULL`

func scanOIDCConsent(row interface{ Scan(...any) error }) (identity.OIDCConsent, error) {
	var (
		k      identity.OIDCConsent
		scopes string
	)
	err := row.Scan(&k.ClientID, &k.ClientName, &scopes, &k.GrantedAt, &k.UpdatedAt)
	k.Scopes, k.GrantedAt, k.UpdatedAt = parseList(scopes), k.GrantedAt.UTC(), k.UpdatedAt.UTC()
	return k, err
}

// OIDCConsent implements identity.OIDCStore.
func (s *Store) OIDCConsent(ctx context.Context, userID, clientID string) (identity.OIDCConsent, error) {
	if !ids.Valid(userID) || !ids.Valid(clientID) {
		return identity.OIDCConsent{}, identity.ErrOIDCConsentNotFound
	}
	k, err := scanOIDCConsent(s.db.QueryRow(ctx, oidcConsentQuery+` AND k.client_id = $2`, userID, clientID))
	if errors.Is(err, sql.ErrNoRows) {
		return identity.OIDCConsent{}, identity.ErrOIDCConsentNotFound
	}
	return k, err
}

// ListOIDCConsents implements identity.OIDCStore.
func (s *Store) ListOIDCConsents(ctx context.Context, userID string) ([]identity.OIDCConsent, error) {
	out := []identity.OIDCConsent{}
	if !ids.Valid(userID) {
		return out, nil
	}
	rows, err := s.db.Query(ctx, oidcConsentQuery+` ORDER BY k.updated_at DESC, k.client_id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		k, err := scanOIDCConsent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// WithdrawOIDCConsent implements identity.OIDCStore. A code issued but
// not yet redeemed is stopped the way a reused one is (code_reused_at),
// so nothing more is issued on the withdrawn consent.
func (s *Store) WithdrawOIDCConsent(ctx context.Context, userID, clientID string) error {
	if !ids.Valid(userID) || !ids.Valid(clientID) {
		return identity.ErrOIDCConsentNotFound
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM oidc_consents WHERE user_id = $1 AND client_id = $2`, userID, clientID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return identity.ErrOIDCConsentNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE oidc_tokens SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL`,
			tx.Now, userID, clientID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE oidc_auth_requests SET code_reused_at = $1
			WHERE user_id = $2 AND client_id = $3 AND done AND code_used_at IS NULL AND code_reused_at IS NULL AND expires_at > $1`,
			tx.Now, userID, clientID)
		return err
	})
}

// SaveOIDCCode implements identity.OIDCStore.
func (s *Store) SaveOIDCCode(ctx context.Context, id, codeDigest string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE oidc_auth_requests SET code_digest = $1
			WHERE id = $2 AND done AND code_digest IS NULL AND expires_at > $3`, codeDigest, id, tx.Now)
		return affected(res, err)
	})
}

func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return identity.ErrOIDCGrantUnknown
	}
	return nil
}

// OIDCAuthRequestByCode implements identity.OIDCStore. It only reads on
// the way to an exchange; redemption is RedeemOIDCCode's, in the same
// statement as the tokens.
func (s *Store) OIDCAuthRequestByCode(ctx context.Context, codeDigest string) (identity.OIDCAuthRequest, identity.OIDCClient, string, error) {
	var (
		spent  bool
		digest sql.NullString
	)
	clientDest, client := oidcClientDest()
	r, err := scanOIDCAuthRequest(s.db.QueryRow(ctx, `
		SELECT `+qualified("r", oidcAuthRequestColumns)+`,
			r.code_used_at IS NOT NULL OR EXISTS (SELECT 1 FROM oidc_tokens t WHERE t.auth_request_id = r.id AND t.from_code),
			`+qualified("c", oidcClientColumns)+`, c.secret_digest
		FROM oidc_auth_requests r JOIN oidc_clients c ON c.id = r.client_id WHERE r.code_digest = $1`, codeDigest),
		append(append([]any{&spent}, clientDest...), &digest)...)
	if err != nil {
		return identity.OIDCAuthRequest{}, identity.OIDCClient{}, "", err
	}
	if spent {
		return identity.OIDCAuthRequest{}, identity.OIDCClient{}, "", s.codeReused(ctx, r.ID)
	}
	if !r.ExpiresAt.After(s.db.Now()) {
		return identity.OIDCAuthRequest{}, identity.OIDCClient{}, "", identity.ErrOIDCGrantUnknown
	}
	return r, client(), digest.String, nil
}

// codeReused handles a second use of request id's code (RFC 6749 §4.1.2):
// everything the first use issued is revoked, and the request is marked
// so nothing more is issued for it. It answers ErrOIDCGrantReused once
// the revocation is committed.
func (s *Store) codeReused(ctx context.Context, id string) error {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE oidc_auth_requests SET code_reused_at = $1 WHERE id = $2 AND code_reused_at IS NULL`, tx.Now, id); err != nil {
			return err
		}
		// The code's tokens (from_code, on oidc_tokens_one_exchange) head
		// the families it issued; their successors share the family.
		return revokeFamiliesOf(ctx, tx, `auth_request_id = $2 AND from_code`, id)
	})
	if err != nil {
		return err
	}
	return identity.ErrOIDCGrantReused
}

// RedeemOIDCCode implements identity.OIDCStore. The statement inserts the
// tokens only while the code is unused and its client honoured; the
// unique index oidc_tokens_one_exchange lets one exchange of a code insert
// them, ever, so a concurrent second one fails there (on PostgreSQL it
// waits for the first to commit) and is a reuse. Being one statement, it
// shares its commit with the writes queued beside it (sqldb.DB.Write):
// SQLite and PostgreSQL serialise commits, and a code exchange used to
// need two of its own. On PostgreSQL the client's row is share-locked, so
// RevokeOIDCClient (which updates it) either waits for the tokens and
// revokes them, or commits first and the statement finds the client
// revoked.
func (s *Store) RedeemOIDCCode(ctx context.Context, id string, access identity.OIDCToken, refresh *identity.OIDCToken, refreshDigest string) error {
	if !ids.Valid(id) {
		return identity.ErrOIDCGrantUnknown
	}
	pg := s.db.Engine == sqldb.Postgres
	cast := func(param, typ string) string {
		if pg {
			return param + "::" + typ
		}
		return param
	}
	now := sqldb.Timestamp(s.db.Now())
	args := []any{now, id, access.FamilyID, access.ID, sqldb.Timestamp(access.ExpiresAt)}
	rows := `SELECT ` + cast("$4", "uuid") + ` AS id, 'access' AS kind, ` + cast("NULL", "text") + ` AS digest, ` + cast("$5", "timestamptz") + ` AS expires_at`
	if refresh != nil {
		args = append(args, refresh.ID, refreshDigest, sqldb.Timestamp(refresh.ExpiresAt))
		rows += ` UNION ALL SELECT ` + cast("$6", "uuid") + `, 'refresh', ` + cast("$7", "text") + `, ` + cast("$8", "timestamptz")
	}
	lock := ""
	if pg {
		lock = " FOR SHARE OF c"
	}
	res, err := s.db.Write(ctx, `
		INSERT INTO oidc_tokens (id, kind, client_id, user_id, family_id, auth_request_id, digest, scopes, auth_time, created_at, expires_at, from_code)
		SELECT k.id, k.kind, r.client_id, r.user_id, `+cast("$3", "uuid")+`, r.id, k.digest, r.scopes, r.auth_time, `+cast("$1", "timestamptz")+`, k.expires_at, TRUE
		FROM oidc_auth_requests r JOIN oidc_clients c ON c.id = r.client_id JOIN users u ON u.id = r.user_id JOIN (`+rows+`) k ON TRUE
		WHERE r.id = `+cast("$2", "text")+` AND r.done AND r.code_digest IS NOT NULL AND r.code_used_at IS NULL AND r.code_reused_at IS NULL
		AND r.expires_at > `+cast("$1", "timestamptz")+` AND c.revoked_at IS NULL AND u.disabled_at IS NULL`+lock, args...)
	if sqldb.IsUniqueViolation(err) {
		return s.codeReused(ctx, id)
	}
	return affected(res, err)
}

// BurnOIDCCode implements identity.OIDCStore.
func (s *Store) BurnOIDCCode(ctx context.Context, id string) error {
	if !ids.Valid(id) {
		return nil
	}
	_, err := s.db.Write(ctx, `UPDATE oidc_auth_requests SET code_used_at = $1 WHERE id = $2 AND code_digest IS NOT NULL AND code_used_at IS NULL`,
		sqldb.Timestamp(s.db.Now()), id)
	return err
}

// revokeFamiliesOf revokes every token in the families of the tokens
// matching where (with $2 as its argument).
func revokeFamiliesOf(ctx context.Context, tx *sqldb.Tx, where string, arg any) error {
	_, err := tx.Exec(ctx, `
		UPDATE oidc_tokens SET revoked_at = $1
		WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM oidc_tokens WHERE `+where+`)`, tx.Now, arg)
	return err
}

// RotateOIDCTokens implements identity.OIDCStore.
func (s *Store) RotateOIDCTokens(ctx context.Context, access, refresh identity.OIDCToken, refreshDigest, rotate string) error {
	var reused bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		// The client's row lock orders this against RevokeOIDCClient.
		var revoked sql.NullTime
		err := tx.QueryRow(ctx, `SELECT revoked_at FROM oidc_clients WHERE id = $1`+tx.DB().ForUpdate(), access.ClientID).Scan(&revoked)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked.Valid) {
			return identity.ErrOIDCGrantUnknown
		}
		if err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `
			UPDATE oidc_tokens SET rotated_at = $1
			WHERE digest = $2 AND kind = 'refresh' AND rotated_at IS NULL AND revoked_at IS NULL AND expires_at > $1`, tx.Now, rotate)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := revokeFamiliesOf(ctx, tx, `digest = $2`, rotate); err != nil {
				return err
			}
			reused = true
			return nil
		}
		if err := insertOIDCToken(ctx, tx, access, ""); err != nil {
			return err
		}
		return insertOIDCToken(ctx, tx, refresh, refreshDigest)
	})
	if err == nil && reused {
		err = identity.ErrOIDCGrantReused
	}
	return err
}

func insertOIDCToken(ctx context.Context, tx *sqldb.Tx, t identity.OIDCToken, digest string) error {
	var d, authReq any
	if digest != "" {
		d = digest
	}
	if t.AuthRequestID != "" {
		authReq = t.AuthRequestID
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO oidc_tokens (id, kind, client_id, user_id, family_id, auth_request_id, digest, scopes, auth_time, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		t.ID, t.Kind, t.ClientID, t.UserID, t.FamilyID, authReq, d, jsonList(t.Scopes), sqldb.Timestamp(t.AuthTime), tx.Now, sqldb.Timestamp(t.ExpiresAt))
	return err
}

const oidcTokenColumns = `t.id, t.kind, t.client_id, t.user_id, t.family_id, t.auth_request_id, t.scopes, t.auth_time, t.created_at, t.expires_at`

func scanOIDCToken(row interface{ Scan(...any) error }, extra ...any) (identity.OIDCToken, error) {
	var (
		t       identity.OIDCToken
		authReq sql.NullString
		scopes  string
	)
	err := row.Scan(append([]any{&t.ID, &t.Kind, &t.ClientID, &t.UserID, &t.FamilyID, &authReq, &scopes, &t.AuthTime, &t.CreatedAt, &t.ExpiresAt}, extra...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return t, identity.ErrOIDCGrantUnknown
	}
	t.AuthRequestID, t.Scopes = authReq.String, parseList(scopes)
	t.AuthTime, t.CreatedAt, t.ExpiresAt = t.AuthTime.UTC(), t.CreatedAt.UTC(), t.ExpiresAt.UTC()
	return t, err
}

// OIDCRefreshToken implements identity.OIDCStore.
func (s *Store) OIDCRefreshToken(ctx context.Context, digest string) (identity.OIDCToken, error) {
	var (
		rotated, revoked, clientRevoked sql.NullTime
	)
	t, err := scanOIDCToken(s.db.QueryRow(ctx, `
		SELECT `+oidcTokenColumns+`, t.rotated_at, t.revoked_at, c.revoked_at
		FROM oidc_tokens t JOIN oidc_clients c ON c.id = t.client_id
		WHERE t.digest = $1 AND t.kind = 'refresh'`, digest), &rotated, &revoked, &clientRevoked)
	if err != nil {
		return identity.OIDCToken{}, err
	}
	if rotated.Valid {
		// A rotated token presented again: it was stolen or replayed, so
		// the whole chain goes.
		if err := s.db.InTx(ctx, func(tx *sqldb.Tx) error { return revokeFamiliesOf(ctx, tx, `digest = $2`, digest) }); err != nil {
			return identity.OIDCToken{}, err
		}
		return identity.OIDCToken{}, identity.ErrOIDCGrantReused
	}
	if revoked.Valid || clientRevoked.Valid || !t.ExpiresAt.After(s.db.Now()) {
		return identity.OIDCToken{}, identity.ErrOIDCGrantUnknown
	}
	return t, nil
}

// OIDCAccessToken implements identity.OIDCStore: one point read, behind
// every userinfo and introspection request (sqldb.ReadRow).
func (s *Store) OIDCAccessToken(ctx context.Context, id string) (identity.OIDCToken, identity.User, error) {
	var (
		u        identity.User
		verified sql.NullTime
	)
	if !ids.Valid(id) {
		return identity.OIDCToken{}, u, identity.ErrOIDCGrantUnknown
	}
	t, err := scanOIDCToken(s.db.ReadRow(ctx, `
		SELECT `+oidcTokenColumns+`, u.id, u.email, u.display_name, u.staff, u.created_at, u.verified_at
		FROM oidc_tokens t JOIN oidc_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id
		WHERE t.id = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND c.revoked_at IS NULL AND t.expires_at > $2
		AND u.disabled_at IS NULL`,
		id, sqldb.Timestamp(s.db.Now())), &u.ID, &u.Email, &u.DisplayName, &u.Staff, &u.CreatedAt, &verified)
	u.EmailVerifiedAt = timePtr(verified)
	return t, u, err
}

// RevokeOIDCToken implements identity.OIDCStore.
func (s *Store) RevokeOIDCToken(ctx context.Context, id, clientID string) error {
	if !ids.Valid(id) || !ids.Valid(clientID) {
		return nil
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			UPDATE oidc_tokens SET revoked_at = $1
			WHERE revoked_at IS NULL AND (
				(id = $2 AND client_id = $3 AND kind = 'access')
				OR family_id IN (SELECT family_id FROM oidc_tokens WHERE id = $2 AND client_id = $3 AND kind = 'refresh'))`,
			tx.Now, id, clientID)
		return err
	})
}

// RevokeOIDCUserClient implements identity.OIDCStore.
func (s *Store) RevokeOIDCUserClient(ctx context.Context, userID, clientID string) error {
	if !ids.Valid(userID) || !ids.Valid(clientID) {
		return nil
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE oidc_tokens SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL`, tx.Now, userID, clientID)
		return err
	})
}

// OIDCUser implements identity.OIDCStore.
func (s *Store) OIDCUser(ctx context.Context, userID string, withAccounts bool) (identity.OIDCUser, error) {
	var (
		u        identity.OIDCUser
		verified sql.NullTime
	)
	if !ids.Valid(userID) {
		return u, identity.ErrUserNotFound
	}
	err := s.db.QueryRow(ctx, `SELECT id, email, display_name, staff, created_at, verified_at FROM users WHERE id = $1 AND disabled_at IS NULL`, userID).
		Scan(&u.User.ID, &u.User.Email, &u.User.DisplayName, &u.User.Staff, &u.User.CreatedAt, &verified)
	u.User.EmailVerifiedAt = timePtr(verified)
	if errors.Is(err, sql.ErrNoRows) {
		return u, identity.ErrUserNotFound
	}
	if err != nil || !withAccounts {
		return u, err
	}
	rows, err := s.db.Query(ctx, `
		SELECT `+accountColumns+`, m.role
		FROM memberships m JOIN accounts a ON a.id = m.account_id
		WHERE m.user_id = $1 ORDER BY a.created_at, a.id`, userID)
	if err != nil {
		return u, err
	}
	defer rows.Close()
	u.Accounts = []identity.Account{}
	for rows.Next() {
		var role string
		a, err := scanAccount(rows, &role)
		if err != nil {
			return u, err
		}
		a.Role = identity.Role(role)
		u.Accounts = append(u.Accounts, a)
	}
	return u, rows.Err()
}
