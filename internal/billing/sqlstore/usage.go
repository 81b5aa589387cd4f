package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

const usageColumns = `id, account_id, metric, quantity, window_start, window_end, source, created_at`

func scanUsage(r scanner) (billing.UsageRecord, error) {
	var u billing.UsageRecord
	err := r.Scan(&u.ID, &u.AccountID, &u.Metric, &u.Quantity, (*sqldb.TimeValue)(&u.WindowStart), (*sqldb.TimeValue)(&u.WindowEnd),
		&u.Source, (*sqldb.TimeValue)(&u.CreatedAt))
	return u, err
}

// RecordUsage implements billing.UsageStore.
func (s *Store) RecordUsage(ctx context.Context, u billing.UsageRecord) (billing.UsageRecord, bool, error) {
	var (
		out     billing.UsageRecord
		created bool
	)
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		out, created, err = RecordUsageIn(ctx, tx, u)
		return err
	})
	return out, created, err
}

// RecordUsageIn is RecordUsage inside tx, for the event consumer whose
// transaction also records the envelope id: the record, its hour's sum,
// its outbox row and, when the account's active subscription is on a plan
// metering the metric, its meter report.
func RecordUsageIn(ctx context.Context, tx *sqldb.Tx, u billing.UsageRecord) (billing.UsageRecord, bool, error) {
	u.WindowStart, u.WindowEnd, u.CreatedAt = sqldb.Timestamp(u.WindowStart), sqldb.Timestamp(u.WindowEnd), tx.Now
	res, err := tx.Exec(ctx, `INSERT INTO usage_records (`+usageColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO NOTHING`, u.ID, u.AccountID, u.Metric, u.Quantity, u.WindowStart, u.WindowEnd, u.Source, tx.Now)
	if err != nil {
		return u, false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		got, err := scanUsage(tx.QueryRow(ctx, `SELECT `+usageColumns+` FROM usage_records WHERE id = $1`, u.ID))
		return got, false, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO usage_hourly (account_id, metric, hour, quantity) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, metric, hour) DO UPDATE SET quantity = usage_hourly.quantity + excluded.quantity`,
		u.AccountID, u.Metric, u.Hour(), u.Quantity); err != nil {
		return u, false, err
	}
	var customer string
	err = tx.QueryRow(ctx, `SELECT c.processor_customer_id FROM subscriptions s
		JOIN plans p ON p.id = s.plan_id JOIN customers c ON c.account_id = s.account_id
		WHERE s.account_id = $1 AND p.meter = $2 AND s.status IN ('active', 'trialing', 'past_due')
		ORDER BY s.created_at LIMIT 1`, u.AccountID, u.Metric).Scan(&customer)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return u, false, err
	default:
		if _, err := tx.Exec(ctx, `INSERT INTO meter_reports (usage_id, processor_customer_id, event_name, value, occurred_at,
			next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6)`, u.ID, customer, u.Metric, u.Quantity, u.WindowEnd, tx.Now); err != nil {
			return u, false, err
		}
	}
	return u, true, writeEvents(ctx, tx, billing.UsageEvent(u))
}

// HourlyUsage implements billing.UsageStore.
func (s *Store) HourlyUsage(ctx context.Context, accountID, metric string, from, to time.Time) ([]billing.HourlyUsage, error) {
	q := `SELECT metric, hour, quantity FROM usage_hourly WHERE account_id = $1 AND hour >= $2 AND hour < $3`
	args := []any{accountID, sqldb.Timestamp(from), sqldb.Timestamp(to)}
	if metric != "" {
		q += ` AND metric = $4`
		args = append(args, metric)
	}
	return scanAll(func(r scanner) (billing.HourlyUsage, error) {
		var h billing.HourlyUsage
		err := r.Scan(&h.Metric, (*sqldb.TimeValue)(&h.Hour), &h.Quantity)
		h.Hour = h.Hour.UTC()
		return h, err
	})(s.db.Query(ctx, q+` ORDER BY hour, metric`, args...))
}

// meterLease is how long a claimed report waits before another relay may
// claim it again (a relay that died mid-send).
const meterLease = time.Minute

// PendingMeterReports implements billing.UsageStore: the due reports are
// claimed by pushing their next attempt a lease ahead, so relays sharing
// the database never send one twice at once.
func (s *Store) PendingMeterReports(ctx context.Context, limit int) ([]billing.MeterReport, error) {
	var out []billing.MeterReport
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		out, err = scanAll(func(r scanner) (billing.MeterReport, error) {
			var m billing.MeterReport
			err := r.Scan(&m.UsageID, &m.CustomerID, &m.EventName, &m.Value, (*sqldb.TimeValue)(&m.OccurredAt), &m.Attempts)
			return m, err
		})(tx.Query(ctx, `SELECT usage_id, processor_customer_id, event_name, value, occurred_at, attempts FROM meter_reports
			WHERE reported_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at, usage_id LIMIT $2`+tx.DB().SkipLocked(),
			tx.Now, limit))
		if err != nil {
			return err
		}
		for _, m := range out {
			if _, err := tx.Exec(ctx, `UPDATE meter_reports SET next_attempt_at = $2 WHERE usage_id = $1`,
				m.UsageID, tx.Now.Add(meterLease)); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// MeterReported implements billing.UsageStore.
func (s *Store) MeterReported(ctx context.Context, usageID, failure string, next time.Time) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if failure == "" {
			_, err := tx.Exec(ctx, `UPDATE meter_reports SET attempts = attempts + 1, reported_at = $2, last_error = NULL
				WHERE usage_id = $1`, usageID, tx.Now)
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE meter_reports SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3
			WHERE usage_id = $1`, usageID, failure, sqldb.Timestamp(next))
		return err
	})
}

// MeterReports lists every meter report with whether it was sent (for
// tests and staff).
func (s *Store) MeterReports(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.Query(ctx, `SELECT usage_id, reported_at IS NOT NULL FROM meter_reports`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		var sent bool
		if err := rows.Scan(&id, &sent); err != nil {
			return nil, err
		}
		out[id] = sent
	}
	return out, rows.Err()
}

func (t *stateTx) QueueMail(ctx context.Context, m billing.Mail) error {
	data, err := json.Marshal(m.Data)
	if err != nil {
		return err
	}
	_, err = t.tx.Exec(ctx, `INSERT INTO mail_outbox (id, template, to_address, account_id, data, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)`, ids.New(), m.Template, m.To, m.AccountID, string(data), t.tx.Now)
	return err
}

func (t *stateTx) AccountEmail(ctx context.Context, accountID string) (string, error) {
	var email string
	err := t.tx.ReadRow(ctx, `SELECT email FROM customers WHERE account_id = $1`, accountID).Scan(&email)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return email, err
}

// mailLease is how long a claimed mail waits before another relay may
// claim it again.
const mailLease = time.Minute

// PendingMail implements billing.MailStore.
func (s *Store) PendingMail(ctx context.Context, limit int) ([]billing.Mail, error) {
	var out []billing.Mail
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		out, err = scanAll(func(r scanner) (billing.Mail, error) {
			var m billing.Mail
			var data string
			if err := r.Scan(&m.ID, &m.Template, &m.To, &m.AccountID, &data, &m.Attempts); err != nil {
				return m, err
			}
			return m, json.Unmarshal([]byte(data), &m.Data)
		})(tx.Query(ctx, `SELECT id, template, to_address, account_id, data, attempts FROM mail_outbox
			WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $2`+tx.DB().SkipLocked(),
			tx.Now, limit))
		if err != nil {
			return err
		}
		for _, m := range out {
			if _, err := tx.Exec(ctx, `UPDATE mail_outbox SET next_attempt_at = $2 WHERE id = $1`, m.ID, tx.Now.Add(mailLease)); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// MailDone implements billing.MailStore.
func (s *Store) MailDone(ctx context.Context, id, failure string, next time.Time, final bool) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		switch {
		case failure == "":
			_, err = tx.Exec(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, sent_at = $2, last_error = NULL WHERE id = $1`, id, tx.Now)
		case final:
			_, err = tx.Exec(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, failed_at = $2, last_error = $3 WHERE id = $1`,
				id, tx.Now, failure)
		default:
			_, err = tx.Exec(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3 WHERE id = $1`,
				id, failure, sqldb.Timestamp(next))
		}
		return err
	})
}
