// Package sqlstore is box's persistence on PostgreSQL and SQLite: all of
// box's SQL, in one place, written once for both engines through sqldb.
// The schema (migrations/) carries the invariants: a partial unique index
// allows one active entitlement per (account, product), triggers keep
// entitlement_events append-only and an entitlement's grant fixed, and
// restricting foreign keys keep any entitlement that has events (on SQLite
// also as triggers, which bind connections that turn foreign keys off).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements box.Store over a sqldb.DB.
type Store struct {
	db     *sqldb.DB
	active activeHints
}

var _ box.Store = (*Store)(nil)

// New returns a store over db, whose schema Migrations must have created.
func New(db *sqldb.DB) *Store {
	return &Store{db: db, active: activeHints{m: map[string]box.Entitlement{}}}
}

// maxActiveHints bounds activeHints; past it the map starts over.
const maxActiveHints = 8192

// activeHints remembers, per (account, product), the active entitlement
// IssueCapability last authorized against, so a repeat skips the read. It
// is only ever a hint: the insert takes the row only while that row is
// still active (and nothing else about a row changes once granted), and a
// miss reads the database again. "None" is never remembered, so a new
// grant is seen at once.
type activeHints struct {
	mu sync.Mutex
	m  map[string]box.Entitlement
}

func (h *activeHints) get(accountID, product string) (box.Entitlement, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[accountID+"/"+product]
	return e, ok
}

func (h *activeHints) put(e box.Entitlement) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) >= maxActiveHints {
		clear(h.m)
	}
	h.m[e.AccountID+"/"+e.Product] = e
}

func (h *activeHints) drop(accountID, product string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, accountID+"/"+product)
}

// rowQuerier is a *sqldb.DB or a *sqldb.Tx.
type rowQuerier interface {
	QueryRow(ctx context.Context, query string, args ...any) *sql.Row
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

const entitlementCols = `id, account_id, product, status, version_range, source, reference,
	granted_by, revoked_by, granted_at, revoked_at, max_installations`

func scanEntitlement(s scanner) (box.Entitlement, error) {
	var e box.Entitlement
	var revokedAt sqldb.NullTime
	err := s.Scan(&e.ID, &e.AccountID, &e.Product, &e.Status, &e.VersionRange, &e.Source, &e.Reference,
		&e.GrantedBy, &e.RevokedBy, (*sqldb.TimeValue)(&e.GrantedAt), &revokedAt, &e.MaxInstallations)
	e.RevokedAt = revokedAt.Ptr()
	return e, err
}

// shareLock locks the entitlement an approval is being recorded under
// until the transaction ends, so a concurrent revoke waits for it. SQLite's
// transactions already hold the write lock.
func shareLock(tx *sqldb.Tx) string {
	if tx.DB().Engine == sqldb.Postgres {
		return " FOR SHARE"
	}
	return ""
}

// entitlementInto is a WriteRow scan that reads the returned entitlement
// into e.
func entitlementInto(e *box.Entitlement) func(sqldb.Row) error {
	return func(r sqldb.Row) (err error) {
		*e, err = scanEntitlement(r)
		return err
	}
}

// Grant implements box.Store.
func (s *Store) Grant(ctx context.Context, ne box.NewEntitlement) (ent box.Entitlement, created bool, err error) {
	if s.db.Engine == sqldb.Postgres {
		err = s.db.WriteRow(ctx, entitlementInto(&ent), grantStatement, ne.AccountID, ne.Product, ne.VersionRange, ne.Source, ne.Reference, ne.GrantedBy, sqldb.Timestamp(s.db.Now()), ne.MaxInstallations)
		if !errors.Is(err, sql.ErrNoRows) {
			return ent, err == nil, err
		}
		// The account already holds the product: the transaction below
		// finds and returns that row.
	}
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		ent, created, err = grant(ctx, tx, ne)
		return err
	})
	return ent, created, err
}

// grantStatement is a grant on PostgreSQL in one statement, so one round
// trip, committed with whatever other writes are waiting (sqldb.DB.WriteRow):
// the entitlement and its grant event are written together or not at all,
// and when the partial unique index already holds an active row the insert
// does nothing and no row comes back. (SQLite has no data-modifying WITH;
// it runs grant in a transaction.)
const grantStatement = `
	WITH granted AS (
		INSERT INTO entitlements (account_id, product, status, version_range, source, reference, granted_by, granted_at, max_installations)
		VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8)
		ON CONFLICT (account_id, product) WHERE status = 'active' DO NOTHING
		RETURNING ` + entitlementCols + `
	), event AS (
		INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
		SELECT id, 'grant', $6, $7, $7 FROM granted
	)
	SELECT ` + entitlementCols + ` FROM granted`

// rowAttempts bounds the retries of a grant, or of a capability issue,
// that finds the account's active row changed between its read and its
// write: each retry means another transaction made progress.
const rowAttempts = 5

// grant inserts an active entitlement and its grant event. The insert does
// nothing when the partial unique index already holds an active row, so a
// duplicate never raises an error that would abort the transaction; the
// existing row is then read and returned with created false.
func grant(ctx context.Context, tx *sqldb.Tx, ne box.NewEntitlement) (box.Entitlement, bool, error) {
	for range rowAttempts {
		ent, err := scanEntitlement(tx.QueryRow(ctx, `
			INSERT INTO entitlements (account_id, product, status, version_range, source, reference, granted_by, granted_at, max_installations)
			VALUES ($1, $2, 'active', $3, $4, $5, $6, $7, $8)
			ON CONFLICT (account_id, product) WHERE status = 'active' DO NOTHING
			RETURNING `+entitlementCols,
			ne.AccountID, ne.Product, ne.VersionRange, ne.Source, ne.Reference, ne.GrantedBy, tx.Now, ne.MaxInstallations))
		if err == nil {
			if err := appendEvent(ctx, tx, ent.ID, "grant", ne.GrantedBy); err != nil {
				return box.Entitlement{}, false, err
			}
			return ent, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return box.Entitlement{}, false, fmt.Errorf("insert entitlement: %w", err)
		}
		existing, err := activeEntitlement(ctx, tx, ne.AccountID, ne.Product, "")
		if err != nil {
			return box.Entitlement{}, false, err
		}
		if existing != nil {
			return *existing, false, nil
		}
	}
	return box.Entitlement{}, false, fmt.Errorf("grant %s/%s: the active row changed on every attempt", ne.AccountID, ne.Product)
}

func appendEvent(ctx context.Context, tx *sqldb.Tx, entitlementID int64, action, actor string) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO entitlement_events (entitlement_id, action, actor_user_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4)`, entitlementID, action, actor, tx.Now)
	if err != nil {
		return fmt.Errorf("insert %s event: %w", action, err)
	}
	return nil
}

// activeEntitlement returns the account's active row for product, or nil.
func activeEntitlement(ctx context.Context, q rowQuerier, accountID, product, lock string) (*box.Entitlement, error) {
	e, err := scanEntitlement(q.QueryRow(ctx, `SELECT `+entitlementCols+` FROM entitlements
		WHERE account_id = $1 AND product = $2 AND status = 'active'`+lock, accountID, product))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read active entitlement: %w", err)
	}
	return &e, nil
}

// Revoke implements box.Store.
func (s *Store) Revoke(ctx context.Context, id int64, actor string) (ent box.Entitlement, err error) {
	// One transaction, its statements one after another: the revoke of the
	// entitlement first, which waits for any activation holding its row
	// (installations_guard), so the installations' update that follows
	// sees every installation committed under it.
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		ent, err = scanEntitlement(tx.QueryRow(ctx, `
			UPDATE entitlements SET status = 'revoked', revoked_by = $2, revoked_at = $3
			WHERE id = $1 AND status = 'active'
			RETURNING `+entitlementCols, id, actor, tx.Now))
		switch {
		case err == nil:
			// Revoking writes one event (entitlements.md 4.3) and ends the
			// entitlement's installations (licensing.md §2); its outstanding
			// capabilities are void because redeeming re-checks the
			// entitlement in the same statement that consumes them.
			if err := appendEvent(ctx, tx, id, "revoke", actor); err != nil {
				return err
			}
			return revokeInstallations(ctx, tx, "entitlement_id = $1", id)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("revoke entitlement: %w", err)
		}
		ent, err = scanEntitlement(tx.QueryRow(ctx, `SELECT `+entitlementCols+` FROM entitlements WHERE id = $1`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return errs.New(box.CodeNotFound, box.MsgNotFound)
		}
		return err
	})
	return ent, err
}

// where builds a conjunction of conditions with numbered placeholders.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(w.args))))
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func (w *where) next() string { return "$" + strconv.Itoa(len(w.args)+1) }

// Entitlements implements box.Store.
func (s *Store) Entitlements(ctx context.Context, f box.EntitlementFilter) ([]box.Entitlement, error) {
	var w where
	if f.AccountID != "" {
		w.add("account_id = $?", f.AccountID)
	}
	if f.Product != "" {
		w.add("product = $?", f.Product)
	}
	if f.Status != "" {
		w.add("status = $?", f.Status)
	}
	if f.Before > 0 {
		w.add("id < $?", f.Before)
	}
	q := `SELECT ` + entitlementCols + ` FROM entitlements` + w.sql() + ` ORDER BY id DESC LIMIT ` + w.next()
	return s.queryEntitlements(ctx, q, append(w.args, f.Limit)...)
}

// ActiveEntitlements implements box.Store.
func (s *Store) ActiveEntitlements(ctx context.Context, accountID string) ([]box.Entitlement, error) {
	return s.queryEntitlements(ctx, `SELECT `+entitlementCols+` FROM entitlements
		WHERE account_id = $1 AND status = 'active' ORDER BY id`, accountID)
}

func (s *Store) queryEntitlements(ctx context.Context, q string, args ...any) ([]box.Entitlement, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list entitlements: %w", err)
	}
	defer rows.Close()
	out := []box.Entitlement{}
	for rows.Next() {
		e, err := scanEntitlement(rows)
		if err != nil {
			return nil, fmt.Errorf("scan entitlement: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// IssueCapability implements box.Store. The entitlement is read (or taken
// from the hints) and authorized outside any transaction; the insert then
// takes it only while that very row is still active (everything else about
// a row is fixed once granted), so a capability is never stored against an
// entitlement revoked in between: the read is repeated and now finds the
// account's current row, or none. One short write, no lock held across the
// authorization.
func (s *Store) IssueCapability(ctx context.Context, c box.NewCapability, authorize func(*box.Entitlement) error) (expires time.Time, err error) {
	for range rowAttempts {
		ent, hinted := s.active.get(c.AccountID, c.Artifact)
		if !hinted {
			found, err := activeEntitlement(ctx, s.db, c.AccountID, c.Artifact, "")
			if err != nil {
				return time.Time{}, err
			}
			if err := authorize(found); err != nil {
				return time.Time{}, err
			}
			ent = *found
		} else if err := authorize(&ent); err != nil {
			// The remembered row does not cover the request; the current
			// one decides.
			s.active.drop(c.AccountID, c.Artifact)
			continue
		}
		now := sqldb.Timestamp(s.db.Now())
		expires = sqldb.Timestamp(now.Add(c.TTL))
		res, err := s.db.Write(ctx, `
			INSERT INTO capabilities (selector, token_digest, entitlement_id, account_id, artifact, version_range, created_at, expires_at)
			SELECT $1, $2, id, $4, $5, $6, $7, $8 FROM entitlements WHERE id = $3 AND status = 'active'`,
			c.Selector, c.Digest, ent.ID, c.AccountID, c.Artifact, c.VersionRange, now, expires)
		if err != nil {
			return time.Time{}, fmt.Errorf("insert capability: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return time.Time{}, fmt.Errorf("insert capability: %w", err)
		} else if n == 1 {
			s.active.put(ent)
			return expires, nil
		}
		s.active.drop(c.AccountID, c.Artifact)
	}
	return time.Time{}, fmt.Errorf("issue capability %s/%s: the active row changed on every attempt", c.AccountID, c.Artifact)
}

// RedeemCapability implements box.Store. The one UPDATE is the whole
// decision: it consumes the capability only while it is unredeemed,
// unvoided (RevokeAccount), unexpired and its entitlement is still active, so of any number
// of concurrent redemptions exactly one matches. The read that follows a
// miss only explains it; it too needs the digest, so a selector alone
// learns nothing.
func (s *Store) RedeemCapability(ctx context.Context, selector, digest string) (red box.Redemption, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		err := tx.QueryRow(ctx, `
			UPDATE capabilities SET redeemed_at = $3
			WHERE selector = $1 AND token_digest = $2 AND redeemed_at IS NULL AND voided_at IS NULL AND expires_at > $3
			  AND EXISTS (SELECT 1 FROM entitlements e
			              WHERE e.id = capabilities.entitlement_id AND e.status = 'active')
			RETURNING account_id, artifact, version_range`, selector, digest, tx.Now).
			Scan(&red.AccountID, &red.Artifact, &red.VersionRange)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var redeemed, voided sqldb.NullTime
		var expiresAt time.Time
		var status string
		err = tx.QueryRow(ctx, `
			SELECT c.redeemed_at, c.voided_at, c.expires_at, e.status
			FROM capabilities c JOIN entitlements e ON e.id = c.entitlement_id
			WHERE c.selector = $1 AND c.token_digest = $2`, selector, digest).Scan(&redeemed, &voided, (*sqldb.TimeValue)(&expiresAt), &status)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return errs.New(box.CodeNotFound, box.MsgNotFound)
		case err != nil:
			return fmt.Errorf("read capability: %w", err)
		case redeemed.Valid:
			return errs.New(box.CodeCapabilityUsed, "the capability has already been redeemed")
		case voided.Valid:
			return errs.New(box.CodeCapabilityExpired, "the capability was withdrawn: its account has been deleted")
		case status != box.StatusActive:
			return errs.New(box.CodeCapabilityExpired, "the capability was withdrawn: its entitlement has been revoked")
		default:
			return errs.New(box.CodeCapabilityExpired, "the capability has expired")
		}
	})
	return red, err
}

const releaseCols = `id, product, version, notes, published_by, published_at`

func scanRelease(s scanner) (box.Release, error) {
	var r box.Release
	err := s.Scan(&r.ID, &r.Product, &r.Version, &r.Notes, &r.PublishedBy, (*sqldb.TimeValue)(&r.PublishedAt))
	return r, err
}

// CreateRelease implements box.Store.
func (s *Store) CreateRelease(ctx context.Context, nr box.NewRelease) (rel box.Release, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		rel, err = scanRelease(tx.QueryRow(ctx, `
			INSERT INTO releases (product, version, notes, published_by, published_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (product, version) DO NOTHING
			RETURNING `+releaseCols, nr.Product, nr.Version, nr.Notes, nr.PublishedBy, tx.Now))
		if errors.Is(err, sql.ErrNoRows) {
			return errs.New(box.CodeConflict, "release "+nr.Product+" "+nr.Version+" already exists")
		}
		return err
	})
	return rel, err
}

// Releases implements box.Store.
func (s *Store) Releases(ctx context.Context, f box.ReleaseFilter) ([]box.Release, error) {
	var w where
	if f.Product != "" {
		w.add("product = $?", f.Product)
	}
	if f.Before > 0 {
		w.add("id < $?", f.Before)
	}
	q := `SELECT ` + releaseCols + ` FROM releases` + w.sql() + ` ORDER BY id DESC LIMIT ` + w.next()
	return s.queryReleases(ctx, q, append(w.args, f.Limit)...)
}

// ReleasesOf implements box.Store.
func (s *Store) ReleasesOf(ctx context.Context, products []string) ([]box.Release, error) {
	if len(products) == 0 {
		return []box.Release{}, nil
	}
	marks := make([]string, len(products))
	args := make([]any, len(products))
	for i, p := range products {
		marks[i] = "$" + strconv.Itoa(i+1)
		args[i] = p
	}
	return s.queryReleases(ctx, `SELECT `+releaseCols+` FROM releases
		WHERE product IN (`+strings.Join(marks, ", ")+`) ORDER BY id DESC`, args...)
}

func (s *Store) queryReleases(ctx context.Context, q string, args ...any) ([]box.Release, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	defer rows.Close()
	out := []box.Release{}
	for rows.Next() {
		r, err := scanRelease(rows)
		if err != nil {
			return nil, fmt.Errorf("scan release: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Approve implements box.Store.
func (s *Store) Approve(ctx context.Context, accountID string, releaseID int64, actor string,
	authorize func(box.Release, *box.Entitlement) error) (a box.Approval, created bool, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		rel, err := scanRelease(tx.QueryRow(ctx, `SELECT `+releaseCols+` FROM releases WHERE id = $1`, releaseID))
		if errors.Is(err, sql.ErrNoRows) {
			return &errs.Error{Code: box.CodeUnprocessable, Message: "release_id names no release",
				Fields: []errs.FieldError{{Field: "release_id", Code: "unknown"}}}
		}
		if err != nil {
			return fmt.Errorf("read release: %w", err)
		}
		ent, err := activeEntitlement(ctx, tx, accountID, rel.Product, shareLock(tx))
		if err != nil {
			return err
		}
		if err := authorize(rel, ent); err != nil {
			return err
		}
		a = box.Approval{AccountID: accountID, ReleaseID: rel.ID, Product: rel.Product, Version: rel.Version}
		err = tx.QueryRow(ctx, `
			INSERT INTO approvals (account_id, release_id, approved_by, created_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (account_id, release_id) DO NOTHING
			RETURNING id, approved_by, created_at`, accountID, rel.ID, actor, tx.Now).
			Scan(&a.ID, &a.ApprovedBy, (*sqldb.TimeValue)(&a.CreatedAt))
		if err == nil {
			created = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("insert approval: %w", err)
		}
		err = tx.QueryRow(ctx, `SELECT id, approved_by, created_at FROM approvals
			WHERE account_id = $1 AND release_id = $2`, accountID, rel.ID).
			Scan(&a.ID, &a.ApprovedBy, (*sqldb.TimeValue)(&a.CreatedAt))
		if err != nil {
			return fmt.Errorf("read approval: %w", err)
		}
		return nil
	})
	return a, created, err
}

// Claim implements box.Store.
func (s *Store) Claim(ctx context.Context, accountID, userID string) (claim *box.Claim, ent box.Entitlement, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		source := box.SourceClaim
		var created bool
		ent, created, err = grant(ctx, tx, box.NewEntitlement{
			AccountID: accountID, Product: box.ProductKit, Source: &source, GrantedBy: userID,
		})
		if err != nil || !created {
			return err
		}
		c := box.Claim{AccountID: accountID, Product: box.ProductKit, ClaimedBy: userID, EntitlementID: ent.ID, CreatedAt: tx.Now}
		if err := tx.QueryRow(ctx, `
			INSERT INTO claims (account_id, product, claimed_by, entitlement_id, created_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			c.AccountID, c.Product, c.ClaimedBy, c.EntitlementID, tx.Now).Scan(&c.ID); err != nil {
			return fmt.Errorf("insert claim: %w", err)
		}
		claim = &c
		return nil
	})
	return claim, ent, err
}

// Timeline implements box.Store. Release events are listed for the products
// the account holds now; entitlement events never appear.
// EntitlementEvents implements box.Store.
func (s *Store) EntitlementEvents(ctx context.Context, before int64, limit int) ([]box.EntitlementEvent, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.db.Query(ctx, `
		SELECT ev.id, ev.action, ev.entitlement_id, e.account_id, e.product, ev.actor_user_id, ev.created_at
		FROM entitlement_events ev JOIN entitlements e ON e.id = ev.entitlement_id
		WHERE ev.id < $1 ORDER BY ev.id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("entitlement events: %w", err)
	}
	defer rows.Close()
	out := []box.EntitlementEvent{}
	for rows.Next() {
		var ev box.EntitlementEvent
		if err := rows.Scan(&ev.ID, &ev.Action, &ev.EntitlementID, &ev.AccountID, &ev.Product, &ev.ActorUserID,
			(*sqldb.TimeValue)(&ev.OccurredAt)); err != nil {
			return nil, fmt.Errorf("scan entitlement event: %w", err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// Timeline implements box.Store.
func (s *Store) Timeline(ctx context.Context, accountID string, after *box.TimelineKey, limit int) ([]box.AuditEvent, error) {
	// The page after a key: the rows ordered after it, as a keyset on the
	// ORDER BY's three columns (spelled out: both engines compare it so).
	where, args := "", []any{accountID, limit}
	if after != nil {
		where = `WHERE occurred_at < $3 OR (occurred_at = $3 AND (approval_id < $4 OR (approval_id = $4 AND release_id < $5)))`
		args = append(args, sqldb.Timestamp(after.OccurredAt), after.ApprovalID, after.ReleaseID)
	}
	rows, err := s.db.Query(ctx, `
		SELECT kind, release_id, approval_id, occurred_at, actor, product, version FROM (
			SELECT 'release.published' AS kind, r.id AS release_id, 0 AS approval_id,
			       r.published_at AS occurred_at, r.published_by AS actor, r.product, r.version
			FROM releases r
			WHERE r.product IN (SELECT e.product FROM entitlements e
			                    WHERE e.account_id = $1 AND e.status = 'active')
			UNION ALL
			SELECT 'approval.created', a.release_id, a.id, a.created_at, a.approved_by, r.product, r.version
			FROM approvals a JOIN releases r ON r.id = a.release_id
			WHERE a.account_id = $1
		) t
		`+where+`
		ORDER BY occurred_at DESC, approval_id DESC, release_id DESC
		LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	defer rows.Close()
	out := []box.AuditEvent{}
	for rows.Next() {
		var ev box.AuditEvent
		if err := rows.Scan(&ev.Type, &ev.ReleaseID, &ev.ApprovalID, (*sqldb.TimeValue)(&ev.OccurredAt),
			&ev.ActorUserID, &ev.Product, &ev.Version); err != nil {
			return nil, fmt.Errorf("scan timeline: %w", err)
		}
		if ev.Type == box.EventApprovalCreated {
			ev.ID = "approval-" + strconv.FormatInt(ev.ApprovalID, 10)
		} else {
			ev.ID = "release-" + strconv.FormatInt(ev.ReleaseID, 10)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}
