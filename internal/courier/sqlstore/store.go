// Package sqlstore is courier's SQL adapter, one implementation for both
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

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements courier.Store.
type Store struct {
	db *sqldb.DB
}

var _ courier.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// writeEvents appends events to the outbox in tx, in one statement: the
// envelope id is fixed here and reused by every delivery attempt.
func writeEvents(ctx context.Context, tx *sqldb.Tx, events ...courier.Event) error {
	if len(events) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent) VALUES `)
	args := []any{tx.Now, traceparent(ctx)}
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("outbox: encode %s: %w", e.Type, err)
		}
		if i > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d, $%d, 'courier', $%d, $1, $%d, $1, $1, $2)", n+1, n+2, n+3, n+4)
		args = append(args, ids.New(), e.Type, e.Subject, string(data))
	}
	if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("outbox: insert %d events: %w", len(events), err)
	}
	return nil
}

func addHistory(ctx context.Context, tx *sqldb.Tx, emailID, status, detail string, attemptID *string) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO email_history (email_id, status, detail, attempt_id, at) VALUES ($1, $2, $3, $4, $5)`,
		emailID, status, detail, attemptID, tx.Now)
	return err
}

// CreateEmail implements courier.Store: one query reads the address's
// suppressions and preferences, and one statement writes the message, its
// history and its event, through sqldb's group commit, which shares a
// transaction and its commit (on PostgreSQL, the round trips of a
// pipeline too) among the requests that arrive together. A transaction of
// its own for each request bounded the accept path on both engines: on
// SQLite every commit appends the pages it changed to the log, so N
// requests wrote the same table and index pages N times. Reading before
// the write rather than in its transaction changes nothing a caller can
// tell: a suppression or preference recorded while the request is
// accepted may apply or not either way (on PostgreSQL, whose transactions
// read committed rows, reading inside guaranteed no more).
func (s *Store) CreateEmail(ctx context.Context, in courier.NewEmail, decide func(reasons []string, prefs *courier.Preferences) string) (courier.Email, error) {
	e := courier.Email{ID: in.ID, Template: in.Template, To: in.To, Locale: in.Locale, RequestedBy: in.RequestedBy}
	rs, err := s.recipientState(ctx, in.To)
	if err != nil {
		return e, err
	}
	skip := decide(rs.reasons, rs.prefs)
	e.Status = courier.StatusQueued
	data := in.SealedData
	if skip != "" {
		e.Status, data = courier.StatusSuppressed, nil
	}
	now := sqldb.Timestamp(s.db.Now())
	e.CreatedAt, e.UpdatedAt = now, now
	e.History = []courier.StatusChange{{Status: e.Status, At: now, Detail: skip}}
	ev := createdEvent(e, skip)
	evData, err := json.Marshal(ev.Data)
	if err != nil {
		return e, fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	args := []any{e.ID, e.Template, e.To, e.Locale, e.RequestedBy, e.Status, data, now, skip,
		ids.New(), ev.Type, ev.Subject, string(evData), traceparent(ctx)}
	// Pushes follow the preferences only: an address suppressed for email
	// is still pushed to.
	if in.PushCategory != "" && rs.subscriptions > 0 && rs.prefs != nil && rs.prefs.On(in.PushCategory) && skip != courier.SkipPreferenceOff {
		err = s.db.InTx(ctx, func(tx *sqldb.Tx) error {
			if _, err := tx.Exec(ctx, s.acceptStatement(), args...); err != nil {
				return err
			}
			e.Pushes, err = queuePushes(ctx, tx, e, rs.userID, in.SealedData, now)
			return err
		})
		return e, err
	}
	_, err = s.db.Write(ctx, s.acceptStatement(), args...)
	return e, err
}

// acceptStatement writes an accepted message, its history entry and its
// event in one statement: a data-modifying WITH on PostgreSQL, an insert
// into the email_acceptances view on SQLite, whose trigger writes the
// three rows.
func (s *Store) acceptStatement() string {
	if s.db.Engine == sqldb.Postgres {
		return `
		WITH email AS (
			INSERT INTO emails (id, template, recipient, locale, requested_by, status, data_sealed,
				next_attempt_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)
		), history AS (
			INSERT INTO email_history (email_id, status, detail, attempt_id, at) VALUES ($1, $6, $9, NULL, $8)
		)
		INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
		VALUES ($10, $11, 'courier', $12, $8, $13, $8, $8, $14)`
	}
	return `
		INSERT INTO email_acceptances (id, template, recipient, locale, requested_by, status, data_sealed, at, detail,
			event_id, event_type, event_subject, event_data, traceparent)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
}

// recipient is what a send learns of its address: the suppression
// reasons that hold for it, the preferences recorded for it (nil when
// none), and the user they belong to with their push subscriptions' count.
type recipient struct {
	reasons       []string
	prefs         *courier.Preferences
	userID        string
	subscriptions int
}

// recipientState reads an address's recipient, in one query.
func (s *Store) recipientState(ctx context.Context, address string) (recipient, error) {
	agg := "group_concat"
	if s.db.Engine == sqldb.Postgres {
		agg = "string_agg"
	}
	var p courier.Preferences
	var found bool
	var joined, user sql.NullString
	var rs recipient
	err := s.db.QueryRow(ctx, `
		SELECT (SELECT `+agg+`(reason, ',') FROM suppressions WHERE address = $1),
			p.product_updates IS NOT NULL, coalesce(p.product_updates, true), coalesce(p.release_announcements, true), coalesce(p.account_activity, true),
			p.user_id, (SELECT count(*) FROM push_subscriptions s WHERE s.user_id = p.user_id)
		FROM (SELECT 1) one LEFT JOIN preferences p ON p.address = $1`, courier.NormalizeAddress(address)).
		Scan(&joined, &found, &p.ProductUpdates, &p.ReleaseAnnouncements, &p.AccountActivity, &user, &rs.subscriptions)
	if err != nil {
		return rs, err
	}
	if joined.Valid {
		rs.reasons = strings.Split(joined.String, ",")
	}
	if found {
		rs.prefs, rs.userID = &p, user.String
	}
	return rs, nil
}

func createdEvent(e courier.Email, skip string) courier.Event {
	if skip != "" {
		return courier.SuppressedEvent(e.To, e.Template, skip)
	}
	return courier.QueuedEvent(e)
}

// Email implements courier.Store.
func (s *Store) Email(ctx context.Context, id string) (courier.Email, error) {
	var e courier.Email
	var created, updated sqldb.TimeValue
	err := s.db.QueryRow(ctx, `
		SELECT id, template, recipient, locale, requested_by, status, attempts, created_at, updated_at
		FROM emails WHERE id = $1`, id).
		Scan(&e.ID, &e.Template, &e.To, &e.Locale, &e.RequestedBy, &e.Status, &e.Attempts, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return e, errs.New(courier.CodeNotFound, "no such email")
	}
	if err != nil {
		return e, err
	}
	e.CreatedAt, e.UpdatedAt = time.Time(created), time.Time(updated)
	rows, err := s.db.Query(ctx, `
		SELECT status, detail, attempt_id, at FROM email_history WHERE email_id = $1 ORDER BY seq`, id)
	if err != nil {
		return e, err
	}
	defer rows.Close()
	for rows.Next() {
		var c courier.StatusChange
		var attempt sql.NullString
		var at sqldb.TimeValue
		if err := rows.Scan(&c.Status, &c.Detail, &attempt, &at); err != nil {
			return e, err
		}
		c.AttemptID, c.At = attempt.String, time.Time(at)
		e.History = append(e.History, c)
	}
	return e, rows.Err()
}

// Suppress implements courier.Store.
func (s *Store) Suppress(ctx context.Context, address, reason string) (courier.Suppression, bool, error) {
	var sup courier.Suppression
	var created bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		var err error
		sup, created, err = suppress(ctx, tx, address, reason, nil)
		if err != nil || !created || reason != courier.ReasonComplaint {
			return err
		}
		return writeEvents(ctx, tx, courier.ComplainedEvent(sup))
	})
	return sup, created, err
}

func suppress(ctx context.Context, tx *sqldb.Tx, address, reason string, emailID *string) (courier.Suppression, bool, error) {
	sup := courier.Suppression{ID: courier.RecipientID(address), Address: courier.NormalizeAddress(address), Reason: reason, CreatedAt: tx.Now}
	res, err := tx.Exec(ctx, `
		INSERT INTO suppressions (address, reason, id, email_id, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (address, reason) DO NOTHING`, sup.Address, reason, sup.ID, emailID, tx.Now)
	if err != nil {
		return sup, false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return sup, true, nil
	}
	var at sqldb.TimeValue
	err = tx.QueryRow(ctx, `SELECT created_at FROM suppressions WHERE address = $1 AND reason = $2`, sup.Address, reason).Scan(&at)
	sup.CreatedAt = time.Time(at)
	return sup, false, err
}

// ClaimDue implements courier.Store: one transaction takes the due queued
// messages (skip-locked on PostgreSQL, so replicas take disjoint sets) and
// leases each by moving next_attempt_at to the lease's end under a new
// attempt id of its own. One select and one update whatever the batch:
// on PostgreSQL each statement is a round trip.
func (s *Store) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]courier.Claimed, error) {
	var out []courier.Claimed
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `
			SELECT id, template, recipient, locale, data_sealed, attempts, created_at FROM emails
			WHERE status = 'queued' AND next_attempt_at <= $1
			ORDER BY next_attempt_at LIMIT $2`+tx.DB().SkipLocked(), tx.Now, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c courier.Claimed
			var created sqldb.TimeValue
			if err := rows.Scan(&c.ID, &c.Template, &c.To, &c.Locale, &c.SealedData, &c.Attempts, &created); err != nil {
				rows.Close()
				return err
			}
			c.CreatedAt = time.Time(created)
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
		attempts, err := leaseRows(ctx, tx, "emails", ids, lease)
		for i := range out {
			out[i].AttemptID = attempts[i]
			out[i].Attempts++
		}
		return err
	})
	return out, err
}

// leaseRows leases table's rows ids for lease, each under a new attempt
// id (returned in ids' order), counting the attempt, in tx.
func leaseRows(ctx context.Context, tx *sqldb.Tx, table string, ids []string, lease time.Duration) ([]string, error) {
	// attempt_id = CASE id WHEN <id> THEN <its attempt id> … END
	var set, in strings.Builder
	args := []any{tx.Now.Add(lease), tx.Now}
	attempts := make([]string, len(ids))
	for i, id := range ids {
		attempts[i] = uuid.NewString()
		n := len(args)
		fmt.Fprintf(&set, " WHEN $%d THEN %s", n+1, uuidArg(tx, n+2))
		if i > 0 {
			in.WriteString(", ")
		}
		fmt.Fprintf(&in, "$%d", n+1)
		args = append(args, id, attempts[i])
	}
	_, err := tx.Exec(ctx, `
		UPDATE `+table+` SET attempt_id = CASE id`+set.String()+` END,
			attempts = attempts + 1, next_attempt_at = $1, updated_at = $2
		WHERE id IN (`+in.String()+`)`, args...)
	return attempts, err
}

// uuidArg is the placeholder $n, typed as a uuid on PostgreSQL, which
// cannot infer the type of a CASE branch from the column it is stored in.
func uuidArg(tx *sqldb.Tx, n int) string {
	if tx.DB().Engine == sqldb.Postgres {
		return fmt.Sprintf("$%d::uuid", n)
	}
	return fmt.Sprintf("$%d", n)
}

// finish moves a leased message to a final status, erasing its data, and
// returns its template, recipient and attempts; ok is false when attemptID
// no longer holds it.
func finish(ctx context.Context, tx *sqldb.Tx, id, attemptID, status string) (template, to string, attempts int, ok bool, err error) {
	err = tx.QueryRow(ctx, `
		UPDATE emails SET status = $3, data_sealed = NULL, updated_at = $4
		WHERE id = $1 AND attempt_id = $2 AND status = 'queued'
		RETURNING template, recipient, attempts`, id, attemptID, status, tx.Now).Scan(&template, &to, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, false, nil
	}
	return template, to, attempts, err == nil, err
}

// DeliveredAll implements courier.Store: one transaction for a batch, as
// every transaction waits its turn for SQLite's one writer, and three
// statements for it (the messages, their history, their events), as each
// is a round trip on PostgreSQL.
func (s *Store) DeliveredAll(ctx context.Context, attempts []courier.Attempt) ([]bool, error) {
	ok := make([]bool, len(attempts))
	if len(attempts) == 0 {
		return ok, nil
	}
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		clear(ok)
		args := make([]any, 2, 2+2*len(attempts))
		args[0], args[1] = courier.StatusDelivered, tx.Now
		var idIn, attemptIn strings.Builder
		for i, a := range attempts {
			if i > 0 {
				idIn.WriteString(", ")
				attemptIn.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&idIn, "$%d", n+1)
			fmt.Fprintf(&attemptIn, "$%d", n+2)
			args = append(args, a.ID, a.AttemptID)
		}
		// The ids find the rows by their key; the attempt ids (unique to a
		// message) keep those whose lease the attempt still holds. By
		// attempt id alone the update walked every queued message.
		rows, err := tx.Query(ctx, `
			UPDATE emails SET status = $1, data_sealed = NULL, updated_at = $2
			WHERE id IN (`+idIn.String()+`) AND attempt_id IN (`+attemptIn.String()+`) AND status = 'queued'
			RETURNING id, attempt_id, template, recipient, attempts`, args...)
		if err != nil {
			return err
		}
		type done struct {
			id, attemptID, template, to string
			attempts                    int
		}
		var finished []done
		for rows.Next() {
			var d done
			if err := rows.Scan(&d.id, &d.attemptID, &d.template, &d.to, &d.attempts); err != nil {
				rows.Close()
				return err
			}
			finished = append(finished, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(finished) == 0 {
			return err
		}
		held := make(map[string]bool, len(finished))
		var history strings.Builder
		hargs := []any{courier.StatusDelivered, tx.Now}
		evs := make([]courier.Event, 0, len(finished))
		for i, d := range finished {
			held[d.attemptID] = true
			if i > 0 {
				history.WriteString(", ")
			}
			n := len(hargs)
			fmt.Fprintf(&history, "($%d, $1, '', $%d, $2)", n+1, n+2)
			hargs = append(hargs, d.id, d.attemptID)
			evs = append(evs, courier.DeliveredEvent(d.id, d.template, d.to, d.attempts))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO email_history (email_id, status, detail, attempt_id, at) VALUES `+history.String(), hargs...); err != nil {
			return err
		}
		if err := writeEvents(ctx, tx, evs...); err != nil {
			return err
		}
		for i, a := range attempts {
			ok[i] = held[a.AttemptID]
		}
		return nil
	})
	if err != nil {
		return make([]bool, len(attempts)), err
	}
	return ok, nil
}

// Bounced implements courier.Store: the message is bounced and its
// address suppressed in one transaction.
func (s *Store) Bounced(ctx context.Context, id, attemptID, detail string) (bool, error) {
	var ok bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		template, to, _, done, err := finish(ctx, tx, id, attemptID, courier.StatusBounced)
		if ok = done; err != nil || !done {
			return err
		}
		if err := addHistory(ctx, tx, id, courier.StatusBounced, detail, &attemptID); err != nil {
			return err
		}
		if _, _, err := suppress(ctx, tx, to, courier.ReasonHardBounce, &id); err != nil {
			return err
		}
		return writeEvents(ctx, tx, courier.BouncedEvent(id, template, to, detail))
	})
	return ok, err
}

// Failed implements courier.Store. No event: the catalogue has none for a
// message given up.
func (s *Store) Failed(ctx context.Context, id, attemptID, detail string) (bool, error) {
	var ok bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, _, _, done, err := finish(ctx, tx, id, attemptID, courier.StatusFailed)
		if ok = done; err != nil || !done {
			return err
		}
		return addHistory(ctx, tx, id, courier.StatusFailed, detail, &attemptID)
	})
	return ok, err
}

// Retry implements courier.Store.
func (s *Store) Retry(ctx context.Context, id, attemptID, detail string, at time.Time) (bool, error) {
	var ok bool
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE emails SET next_attempt_at = $3, updated_at = $4
			WHERE id = $1 AND attempt_id = $2 AND status = 'queued'`, id, attemptID, sqldb.Timestamp(at), tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		ok = true
		return addHistory(ctx, tx, id, courier.StatusQueued, "temporary failure: "+detail, &attemptID)
	})
	return ok, err
}
