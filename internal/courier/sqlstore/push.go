package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

var _ courier.PushStore = (*Store)(nil)

// queuePushes queues e's push to every subscription userID has, in tx,
// with data (sealed for the email's id), and returns how many.
func queuePushes(ctx context.Context, tx *sqldb.Tx, e courier.Email, userID string, data []byte, now time.Time) (int, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM push_subscriptions WHERE user_id = $1 ORDER BY created_at`, userID)
	if err != nil {
		return 0, err
	}
	var subs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		subs = append(subs, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, sub := range subs {
		id := uuid.NewString()
		if _, err := tx.Exec(ctx, `
			INSERT INTO push_sends (id, email_id, subscription_id, template, status, data_sealed, next_attempt_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'queued', $5, $6, $6, $6)`, id, e.ID, sub, e.Template, data, now); err != nil {
			return 0, err
		}
		if err := addPushHistory(ctx, tx, id, courier.PushQueued, "", nil); err != nil {
			return 0, err
		}
	}
	return len(subs), nil
}

func addPushHistory(ctx context.Context, tx *sqldb.Tx, pushID, status, detail string, attemptID *string) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO push_history (push_id, status, detail, attempt_id, at) VALUES ($1, $2, $3, $4, $5)`,
		pushID, status, detail, attemptID, tx.Now)
	return err
}

// failQueuedPushes fails, in tx, the pushes still queued for a
// subscription that is going away or changing hands.
func failQueuedPushes(ctx context.Context, tx *sqldb.Tx, subscriptionID, detail string) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO push_history (push_id, status, detail, attempt_id, at)
		SELECT id, 'failed', $2, NULL, $3 FROM push_sends WHERE subscription_id = $1 AND status = 'queued'`,
		subscriptionID, detail, tx.Now); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		UPDATE push_sends SET status = 'failed', data_sealed = NULL, attempt_id = NULL, updated_at = $2
		WHERE subscription_id = $1 AND status = 'queued'`, subscriptionID, tx.Now)
	return err
}

// SubscribePush implements courier.PushStore: one statement inserts the
// subscription or, for an endpoint already known, replaces its keys and
// owner, so two requests racing with one endpoint leave one row.
func (s *Store) SubscribePush(ctx context.Context, address string, sub courier.PushSubscription, sealedAuth []byte) (courier.PushSubscription, error) {
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := claimAddress(ctx, tx, sub.UserID, address); err != nil {
			return err
		}
		var previous string
		err := tx.QueryRow(ctx, `SELECT id FROM push_subscriptions WHERE endpoint = $1 AND user_id <> $2`+tx.DB().ForUpdate(),
			sub.Endpoint, sub.UserID).Scan(&previous)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if err := failQueuedPushes(ctx, tx, previous, "the browser's subscription passed to another user"); err != nil {
				return err
			}
		}
		var created, updated sqldb.TimeValue
		if err := tx.QueryRow(ctx, `
			INSERT INTO push_subscriptions (id, user_id, endpoint, p256dh, auth_sealed, device, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (endpoint) DO UPDATE SET user_id = excluded.user_id, p256dh = excluded.p256dh,
				auth_sealed = excluded.auth_sealed, device = excluded.device, updated_at = excluded.updated_at
			RETURNING id, created_at, updated_at`,
			sub.ID, sub.UserID, sub.Endpoint, sub.P256dh, sealedAuth, sub.Device, tx.Now).
			Scan(&sub.ID, &created, &updated); err != nil {
			return err
		}
		sub.CreatedAt, sub.UpdatedAt = time.Time(created), time.Time(updated)
		return nil
	})
	return sub, err
}

// PushSubscriptions implements courier.PushStore, oldest first.
func (s *Store) PushSubscriptions(ctx context.Context, userID string) ([]courier.PushSubscription, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, user_id, endpoint, p256dh, device, created_at, updated_at FROM push_subscriptions
		WHERE user_id = $1 ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []courier.PushSubscription{}
	for rows.Next() {
		var p courier.PushSubscription
		var created, updated sqldb.TimeValue
		if err := rows.Scan(&p.ID, &p.UserID, &p.Endpoint, &p.P256dh, &p.Device, &created, &updated); err != nil {
			return nil, err
		}
		p.CreatedAt, p.UpdatedAt = time.Time(created), time.Time(updated)
		out = append(out, p)
	}
	return out, rows.Err()
}

// DeletePushSubscription implements courier.PushStore.
func (s *Store) DeletePushSubscription(ctx context.Context, userID, id string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM push_subscriptions WHERE id = $1 AND user_id = $2`, id, userID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return errs.New(courier.CodeNotFound, "no such push subscription")
		}
		return deleteSubscription(ctx, tx, id, "the subscription was deleted")
	})
}

func deleteSubscription(ctx context.Context, tx *sqldb.Tx, id, detail string) error {
	if err := failQueuedPushes(ctx, tx, id, detail); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM push_subscriptions WHERE id = $1`, id)
	return err
}

// Pushes implements courier.PushStore.
func (s *Store) Pushes(ctx context.Context, emailID string) ([]courier.PushSend, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM emails WHERE id = $1`, emailID).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errs.New(courier.CodeNotFound, "no such email")
	}
	rows, err := s.db.Query(ctx, `
		SELECT p.id, p.email_id, coalesce(p.subscription_id`+textCast(s.db)+`, ''), p.template, p.status, p.attempts, p.created_at, p.updated_at,
			h.status, h.detail, h.at
		FROM push_sends p JOIN push_history h ON h.push_id = p.id
		WHERE p.email_id = $1 ORDER BY p.created_at, p.id, h.seq`, emailID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []courier.PushSend{}
	for rows.Next() {
		var p courier.PushSend
		var c courier.StatusChange
		var created, updated, at sqldb.TimeValue
		if err := rows.Scan(&p.ID, &p.EmailID, &p.SubscriptionID, &p.Template, &p.Status, &p.Attempts, &created, &updated,
			&c.Status, &c.Detail, &at); err != nil {
			return nil, err
		}
		c.At = time.Time(at)
		if len(out) == 0 || out[len(out)-1].ID != p.ID {
			p.CreatedAt, p.UpdatedAt = time.Time(created), time.Time(updated)
			out = append(out, p)
		}
		last := &out[len(out)-1]
		last.History = append(last.History, c)
	}
	return out, rows.Err()
}

// textCast casts a uuid column to text on PostgreSQL, so coalesce can
// give it a text default.
func textCast(db *sqldb.DB) string {
	if db.Engine == sqldb.Postgres {
		return "::text"
	}
	return ""
}

// ClaimPushes implements courier.PushStore.
func (s *Store) ClaimPushes(ctx context.Context, limit int, lease time.Duration) ([]courier.ClaimedPush, error) {
	var out []courier.ClaimedPush
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `
			SELECT p.id, p.email_id, p.template, p.data_sealed, p.attempts, s.id, s.endpoint, s.p256dh, s.auth_sealed
			FROM push_sends p JOIN push_subscriptions s ON s.id = p.subscription_id
			WHERE p.status = 'queued' AND p.next_attempt_at <= $1
			ORDER BY p.next_attempt_at LIMIT $2`+tx.DB().SkipLocked(), tx.Now, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c courier.ClaimedPush
			if err := rows.Scan(&c.ID, &c.EmailID, &c.Template, &c.SealedData, &c.Attempts, &c.SubscriptionID, &c.Endpoint, &c.P256dh, &c.SealedAuth); err != nil {
				rows.Close()
				return err
			}
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(out) == 0 {
			return err
		}
		ids := make([]string, len(out))
		for i := range out {
			ids[i] = out[i].ID
		}
		attempts, err := leaseRows(ctx, tx, "push_sends", ids, lease)
		for i := range out {
			out[i].AttemptID = attempts[i]
			out[i].Attempts++
		}
		return err
	})
	return out, err
}

// RecordPushes implements courier.PushStore.
func (s *Store) RecordPushes(ctx context.Context, outcomes []courier.PushOutcome) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		for _, o := range outcomes {
			if err := recordPush(ctx, tx, o); err != nil {
				return err
			}
		}
		return nil
	})
}

func recordPush(ctx context.Context, tx *sqldb.Tx, o courier.PushOutcome) error {
	c := o.Push
	var res sql.Result
	var err error
	switch o.Status {
	case courier.PushQueued:
		if o.Next == nil {
			return fmt.Errorf("push %s: a retry needs its time", c.ID)
		}
		res, err = tx.Exec(ctx, `
			UPDATE push_sends SET attempt_id = NULL, next_attempt_at = $3, updated_at = $4
			WHERE id = $1 AND attempt_id = $2 AND status = 'queued'`, c.ID, c.AttemptID, *o.Next, tx.Now)
	case courier.PushDelivered, courier.PushFailed, courier.PushExpired:
		res, err = tx.Exec(ctx, `
			UPDATE push_sends SET status = $3, data_sealed = NULL, attempt_id = NULL, updated_at = $4
			WHERE id = $1 AND attempt_id = $2 AND status = 'queued'`, c.ID, c.AttemptID, o.Status, tx.Now)
	default:
		return fmt.Errorf("push %s: unknown outcome %q", c.ID, o.Status)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // the attempt lost its lease: another records it
	}
	if err := addPushHistory(ctx, tx, c.ID, o.Status, o.Detail, &c.AttemptID); err != nil {
		return err
	}
	if o.Status == courier.PushExpired {
		return deleteSubscription(ctx, tx, c.SubscriptionID, "the push service no longer knows the subscription")
	}
	return nil
}
