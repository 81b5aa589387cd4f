// Package sqlstore is muse's SQL adapter, one implementation for both
// engines: the vault, aliases and their targets, budgets, usage rows and
// the outbox. The database keeps the rules every connection must keep: a
// target's credential exists while it is routed to, a month's total is
// the sum of its usage rows (a trigger adds each row to one of the
// total's stripes, under that stripe's row lock), and usage rows are
// never changed.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements muse.Store.
type Store struct {
	db *sqldb.DB
}

var _ muse.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// writeEvent appends ev to the outbox in tx.
func writeEvent(ctx context.Context, tx *sqldb.Tx, ev muse.Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	// Queued: it goes with the transaction's next statement or its
	// commit (sqldb.Tx.Queue); a failure fails the transaction.
	return tx.Queue(ctx, `
		INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
		VALUES ($1, $2, 'muse', $3, $4, $5, $4, $4, $6)`,
		ids.New(), ev.Type, ev.Subject, tx.Now, string(data), events.OutboxTraceparent(ctx))
}

// CreateCredential implements muse.Store.
func (s *Store) CreateCredential(ctx context.Context, c muse.Credential) error {
	_, err := s.db.Write(ctx, `
		INSERT INTO provider_credentials (id, account_id, provider, name, base_url, sealed_key, last_four, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, nullable(c.AccountID), c.Provider, c.Name, c.BaseURL, c.Sealed, c.LastFour, sqldb.Timestamp(s.db.Now()))
	if sqldb.IsUniqueViolation(err) {
		return &errs.Error{Code: muse.CodeNameTaken, Message: "a credential of that name exists",
			Fields: []errs.FieldError{{Field: "name", Code: "taken"}}}
	}
	return err
}

const credentialColumns = `id, account_id, provider, name, base_url, sealed_key, last_four, created_at`

func scanCredential(row interface{ Scan(...any) error }) (muse.Credential, error) {
	var (
		c       muse.Credential
		account sql.NullString
	)
	err := row.Scan(&c.ID, &account, &c.Provider, &c.Name, &c.BaseURL, &c.Sealed, &c.LastFour, (*sqldb.TimeValue)(&c.CreatedAt))
	c.AccountID = account.String
	return c, err
}

// Credential implements muse.Store.
func (s *Store) Credential(ctx context.Context, id string) (muse.Credential, error) {
	c, err := scanCredential(s.db.QueryRow(ctx, `SELECT `+credentialColumns+` FROM provider_credentials WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return muse.Credential{}, errs.New(muse.CodeNotFound, "no such provider credential")
	}
	return c, err
}

// Credentials implements muse.Store.
func (s *Store) Credentials(ctx context.Context, accountID string) ([]muse.Credential, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if accountID == "" {
		rows, err = s.db.Query(ctx, `SELECT `+credentialColumns+` FROM provider_credentials WHERE account_id IS NULL ORDER BY name`)
	} else {
		rows, err = s.db.Query(ctx, `SELECT `+credentialColumns+` FROM provider_credentials WHERE account_id = $1 ORDER BY name`, accountID)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []muse.Credential{}
	for rows.Next() {
		c, err := scanCredential(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeleteCredential implements muse.Store: the foreign key from alias
// targets refuses it while an alias routes to the credential.
func (s *Store) DeleteCredential(ctx context.Context, accountID, id string) error {
	var (
		res sql.Result
		err error
	)
	if accountID == "" {
		res, err = s.db.Write(ctx, `DELETE FROM provider_credentials WHERE id = $1 AND account_id IS NULL`, id)
	} else {
		res, err = s.db.Write(ctx, `DELETE FROM provider_credentials WHERE id = $1 AND account_id = $2`, id, accountID)
	}
	if sqldb.IsForeignKeyViolation(err) {
		return errs.New(muse.CodeCredentialInUse, "an alias still routes to this credential; change or delete the alias first")
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errs.New(muse.CodeNotFound, "no such provider credential")
	}
	return nil
}

// PutAlias implements muse.Store.
func (s *Store) PutAlias(ctx context.Context, a muse.Alias) error {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO model_aliases (account_id, alias, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (account_id, alias) DO UPDATE SET updated_at = excluded.updated_at`,
			a.AccountID, a.Name, tx.Now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM alias_targets WHERE account_id = $1 AND alias = $2`, a.AccountID, a.Name); err != nil {
			return err
		}
		for i, t := range a.Targets {
			if _, err := tx.Exec(ctx, `
				INSERT INTO alias_targets (account_id, alias, position, credential_id, upstream_model, weight)
				VALUES ($1, $2, $3, $4, $5, $6)`, a.AccountID, a.Name, i, t.CredentialID, t.Model, t.Weight); err != nil {
				if sqldb.IsForeignKeyViolation(err) {
					return &errs.Error{Code: muse.CodeValidation, Message: "a target names a credential that does not exist",
						Fields: []errs.FieldError{{Field: fmt.Sprintf("targets[%d].credential_id", i), Code: "not_found"}}}
				}
				return err
			}
		}
		return nil
	})
	return err
}

// Alias implements muse.Store.
func (s *Store) Alias(ctx context.Context, accountID, name string) (muse.Alias, error) {
	as, err := s.aliases(ctx, accountID, name)
	if err != nil {
		return muse.Alias{}, err
	}
	if len(as) == 0 {
		return muse.Alias{}, errs.New(muse.CodeNotFound, "no such model alias")
	}
	return as[0], nil
}

// Aliases implements muse.Store.
func (s *Store) Aliases(ctx context.Context, accountID string) ([]muse.Alias, error) {
	return s.aliases(ctx, accountID, "")
}

// aliases reads accountID's aliases (only name's when set) with their
// targets in one query.
func (s *Store) aliases(ctx context.Context, accountID, name string) ([]muse.Alias, error) {
	rows, err := s.db.Query(ctx, `
		SELECT a.alias, a.updated_at, t.credential_id, t.upstream_model, t.weight
		FROM model_aliases a LEFT JOIN alias_targets t ON t.account_id = a.account_id AND t.alias = a.alias
		WHERE a.account_id = $1 AND ($2 = '' OR a.alias = $2)
		ORDER BY a.alias, t.position`, accountID, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []muse.Alias{}
	for rows.Next() {
		var (
			alias       string
			updated     time.Time
			cred, model sql.NullString
			weight      sql.NullInt64
		)
		if err := rows.Scan(&alias, (*sqldb.TimeValue)(&updated), &cred, &model, &weight); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Name != alias {
			out = append(out, muse.Alias{AccountID: accountID, Name: alias, UpdatedAt: updated, Targets: []muse.Target{}})
		}
		if cred.Valid {
			a := &out[len(out)-1]
			a.Targets = append(a.Targets, muse.Target{CredentialID: cred.String, Model: model.String, Weight: int(weight.Int64)})
		}
	}
	return out, rows.Err()
}

// DeleteAlias implements muse.Store; its targets go with it.
func (s *Store) DeleteAlias(ctx context.Context, accountID, name string) error {
	res, err := s.db.Write(ctx, `DELETE FROM model_aliases WHERE account_id = $1 AND alias = $2`, accountID, name)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errs.New(muse.CodeNotFound, "no such model alias")
	}
	return nil
}

// SetBudget implements muse.Store.
func (s *Store) SetBudget(ctx context.Context, accountID string, monthly int64) error {
	if monthly == 0 {
		_, err := s.db.Write(ctx, `DELETE FROM budgets WHERE account_id = $1`, accountID)
		return err
	}
	_, err := s.db.Write(ctx, `
		INSERT INTO budgets (account_id, monthly_tokens, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (account_id) DO UPDATE SET monthly_tokens = excluded.monthly_tokens, updated_at = excluded.updated_at`,
		accountID, monthly, sqldb.Timestamp(s.db.Now()))
	return err
}

// Budget implements muse.Store: one read of the budget and the month's
// total, the sum of its stripes.
func (s *Store) Budget(ctx context.Context, accountID, month string) (muse.Budget, error) {
	var b muse.Budget
	err := s.db.QueryRow(ctx, `
		SELECT coalesce((SELECT monthly_tokens FROM budgets WHERE account_id = $1), 0),
		       coalesce((SELECT CAST(sum(tokens) AS bigint) FROM usage_months WHERE account_id = $1 AND month = $2), 0)`,
		accountID, month).Scan(&b.Monthly, &b.Used)
	return b, err
}

// Plan implements muse.Store: the budget, the month's total, the alias,
// its targets and their credentials in one query.
func (s *Store) Plan(ctx context.Context, accountID, month, alias string) (muse.Plan, error) {
	rows, err := s.db.Query(ctx, `
		SELECT b.monthly, b.used, a.alias, t.upstream_model, t.weight,
		       c.id, c.provider, c.name, c.base_url, c.sealed_key
		FROM (SELECT coalesce((SELECT monthly_tokens FROM budgets WHERE account_id = $1), 0) AS monthly,
		             coalesce((SELECT CAST(sum(tokens) AS bigint) FROM usage_months
		                       WHERE account_id = $1 AND month = $2), 0) AS used) b
		LEFT JOIN model_aliases a ON a.account_id = $1 AND a.alias = $3
		LEFT JOIN alias_targets t ON t.account_id = a.account_id AND t.alias = a.alias
		LEFT JOIN provider_credentials c ON c.id = t.credential_id
		ORDER BY t.position`, accountID, month, alias)
	if err != nil {
		return muse.Plan{}, err
	}
	defer rows.Close()
	p := muse.Plan{Alias: muse.Alias{AccountID: accountID, Name: alias, Targets: []muse.Target{}},
		Credentials: map[string]muse.Credential{}}
	for rows.Next() {
		var (
			name, model, id, provider, credName, baseURL sql.NullString
			weight                                       sql.NullInt64
			sealed                                       []byte
		)
		if err := rows.Scan(&p.Budget.Monthly, &p.Budget.Used, &name, &model, &weight,
			&id, &provider, &credName, &baseURL, &sealed); err != nil {
			return muse.Plan{}, err
		}
		p.Found = name.Valid
		if id.Valid {
			p.Alias.Targets = append(p.Alias.Targets, muse.Target{CredentialID: id.String, Model: model.String, Weight: int(weight.Int64)})
			p.Credentials[id.String] = muse.Credential{ID: id.String, Provider: provider.String, Name: credName.String,
				BaseURL: baseURL.String, Sealed: sealed}
		}
	}
	return p, rows.Err()
}

// RecordUsage implements muse.Store: the usage row (whose trigger adds
// its tokens to the month's total) and the outbox row in one transaction,
// both queued, so on PostgreSQL the BEGIN, the two inserts and the
// COMMIT are one round trip.
func (s *Store) RecordUsage(ctx context.Context, u muse.Usage, ev muse.Event) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		at := u.CreatedAt
		if at.IsZero() {
			at = tx.Now
		}
		err := tx.Queue(ctx, `
			INSERT INTO usage (id, account_id, caller, alias, provider, upstream_model, prompt_tokens, completion_tokens,
				estimated, latency_ms, status, day, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			u.ID, u.AccountID, u.Caller, u.Alias, u.Provider, u.UpstreamModel, u.PromptTokens, u.CompletionTokens,
			u.Estimated, u.LatencyMS, u.Status, at.UTC().Format(time.DateOnly), sqldb.Timestamp(at))
		if err != nil {
			return err
		}
		return writeEvent(ctx, tx, ev)
	})
}

// UsageSums implements muse.Store.
func (s *Store) UsageSums(ctx context.Context, accountID string, from, to time.Time) ([]muse.UsageSum, error) {
	rows, err := s.db.Query(ctx, `
		SELECT day, alias, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0)
		FROM usage WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
		GROUP BY day, alias ORDER BY day, alias`, accountID, sqldb.Timestamp(from), sqldb.Timestamp(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []muse.UsageSum{}
	for rows.Next() {
		var u muse.UsageSum
		if err := rows.Scan(&u.Day, &u.Alias, &u.Requests, &u.PromptTokens, &u.CompletionTokens); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
