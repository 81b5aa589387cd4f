package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

const installationCols = `id, account_id, entitlement_id, product, fingerprint, name, version, status,
	last_seen_at, lapses_at, created_at, ended_at`

// scanInstallation reads a row; an active row past its lapses_at reads as
// inactive at now.
func scanInstallation(s scanner, now time.Time) (box.Installation, error) {
	var i box.Installation
	var ended sqldb.NullTime
	err := s.Scan(&i.ID, &i.AccountID, &i.EntitlementID, &i.Product, &i.Fingerprint, &i.Name, &i.Version, &i.Status,
		(*sqldb.TimeValue)(&i.LastSeenAt), (*sqldb.TimeValue)(&i.LapsesAt), (*sqldb.TimeValue)(&i.CreatedAt), &ended)
	i.EndedAt = ended.Ptr()
	if i.Status == box.InstallationActive && !now.Before(i.LapsesAt) {
		i.Status = box.InstallationInactive
	}
	return i, err
}

// errFingerprintRace is an activation whose insert met an active row of
// the same fingerprint committed after its own look: the next attempt
// finds that row.
var errFingerprintRace = errors.New("an installation of the same fingerprint was activated meanwhile")

// installationError turns the refusals of installations_guard into box's
// codes.
func installationError(what string, err error) error {
	switch {
	case sqldb.IsRaised(err) && strings.Contains(err.Error(), "installation_limit"):
		return errs.New(box.CodeInstallationLimit, "the entitlement's installations are all in use: deactivate one, or wait until one lapses")
	case sqldb.IsRaised(err) && strings.Contains(err.Error(), "installation_entitlement"):
		return errs.New(box.CodeEntitlementRequired, "the account holds no active entitlement for the product")
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// Activate implements box.Store. The database decides the limit
// (installations_guard); a refusal is tried once more, since it may have
// been a concurrent activation of the same fingerprint, which the second
// attempt then finds.
func (s *Store) Activate(ctx context.Context, in box.NewInstallation, authorize func(*box.Entitlement) error) (inst box.Installation, created bool, err error) {
	for attempt := range rowAttempts {
		err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
			inst, created, err = activate(ctx, tx, in, authorize)
			return err
		})
		retry := errors.Is(err, errFingerprintRace) || (attempt == 0 && errs.Code(err) == box.CodeInstallationLimit)
		if !retry {
			return inst, created, err
		}
	}
	return inst, created, err
}

func activate(ctx context.Context, tx *sqldb.Tx, in box.NewInstallation, authorize func(*box.Entitlement) error) (box.Installation, bool, error) {
	ent, err := activeEntitlement(ctx, tx, in.AccountID, in.Product, "")
	if err != nil {
		return box.Installation{}, false, err
	}
	if err := authorize(ent); err != nil {
		return box.Installation{}, false, err
	}
	lapses := sqldb.Timestamp(tx.Now.Add(in.TTL))
	inst, err := scanInstallation(tx.QueryRow(ctx, `
		UPDATE installations SET last_seen_at = $4, lapses_at = $5, version = COALESCE($6, version)
		WHERE account_id = $1 AND product = $2 AND fingerprint = $3 AND status = 'active'
		RETURNING `+installationCols, in.AccountID, in.Product, in.Fingerprint, tx.Now, lapses, in.Version), tx.Now)
	if err == nil {
		return inst, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return box.Installation{}, false, installationError("see installation again", err)
	}
	inst, err = scanInstallation(tx.QueryRow(ctx, `
		INSERT INTO installations (id, account_id, entitlement_id, product, fingerprint, name, version, status, last_seen_at, lapses_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, $8)
		ON CONFLICT (account_id, product, fingerprint) WHERE status = 'active' DO NOTHING
		RETURNING `+installationCols,
		in.ID, in.AccountID, ent.ID, in.Product, in.Fingerprint, in.Name, in.Version, tx.Now, lapses), tx.Now)
	switch {
	case err == nil:
		return inst, true, nil
	case errors.Is(err, sql.ErrNoRows):
		return box.Installation{}, false, errFingerprintRace
	default:
		return box.Installation{}, false, installationError("insert installation", err)
	}
}

// Installation implements box.Store.
func (s *Store) Installation(ctx context.Context, id string) (box.Installation, error) {
	inst, err := scanInstallation(s.db.QueryRow(ctx, `SELECT `+installationCols+` FROM installations WHERE id = $1`, id), s.db.Now())
	if errors.Is(err, sql.ErrNoRows) {
		return box.Installation{}, errs.New(box.CodeNotFound, box.MsgNotFound)
	}
	if err != nil {
		return box.Installation{}, fmt.Errorf("read installation: %w", err)
	}
	return inst, nil
}

// ended explains why an installation could not be changed: it is unknown
// or it has ended.
func ended(ctx context.Context, tx *sqldb.Tx, id string) (box.Installation, error) {
	inst, err := scanInstallation(tx.QueryRow(ctx, `SELECT `+installationCols+` FROM installations WHERE id = $1`, id), tx.Now)
	if errors.Is(err, sql.ErrNoRows) {
		return box.Installation{}, errs.New(box.CodeNotFound, box.MsgNotFound)
	}
	if err != nil {
		return box.Installation{}, fmt.Errorf("read installation: %w", err)
	}
	return inst, nil
}

// Heartbeat implements box.Store.
func (s *Store) Heartbeat(ctx context.Context, id string, version *string, ttl time.Duration) (inst box.Installation, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		inst, err = scanInstallation(tx.QueryRow(ctx, `
			UPDATE installations SET last_seen_at = $2, lapses_at = $3, version = COALESCE($4, version)
			WHERE id = $1 AND status = 'active'
			RETURNING `+installationCols, id, tx.Now, sqldb.Timestamp(tx.Now.Add(ttl)), version), tx.Now)
		if !errors.Is(err, sql.ErrNoRows) {
			if err != nil {
				return installationError("record heartbeat", err)
			}
			return nil
		}
		if inst, err = ended(ctx, tx, id); err != nil {
			return err
		}
		return errs.New(box.CodeInstallationEnded, "the installation was "+inst.Status+": activate again")
	})
	return inst, err
}

// Deactivate implements box.Store.
func (s *Store) Deactivate(ctx context.Context, id string) (inst box.Installation, err error) {
	err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		inst, err = scanInstallation(tx.QueryRow(ctx, `
			UPDATE installations SET status = 'deactivated', ended_at = $2
			WHERE id = $1 AND status = 'active'
			RETURNING `+installationCols, id, tx.Now), tx.Now)
		if errors.Is(err, sql.ErrNoRows) {
			inst, err = ended(ctx, tx, id)
			return err
		}
		if err != nil {
			return fmt.Errorf("deactivate installation: %w", err)
		}
		return nil
	})
	return inst, err
}

// Installations implements box.Store.
func (s *Store) Installations(ctx context.Context, f box.InstallationFilter) ([]box.Installation, error) {
	var w where
	if f.AccountID != "" {
		w.add("account_id = $?", f.AccountID)
	}
	now := s.db.Now()
	rows, err := s.db.Query(ctx, `SELECT `+installationCols+` FROM installations`+w.sql()+
		` ORDER BY created_at DESC, id DESC LIMIT `+strconv.Itoa(f.Limit), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list installations: %w", err)
	}
	defer rows.Close()
	out := []box.Installation{}
	for rows.Next() {
		inst, err := scanInstallation(rows, now)
		if err != nil {
			return nil, fmt.Errorf("scan installation: %w", err)
		}
		out = append(out, inst)
	}
	return out, rows.Err()
}

// revokeInstallations revokes the active installations matching cond
// (with arg as $1), inside the revoke's transaction.
func revokeInstallations(ctx context.Context, tx *sqldb.Tx, cond string, arg any) error {
	if _, err := tx.Exec(ctx, `UPDATE installations SET status = 'revoked', ended_at = $2
		WHERE `+cond+` AND status = 'active'`, arg, tx.Now); err != nil {
		return fmt.Errorf("revoke installations: %w", err)
	}
	return nil
}
