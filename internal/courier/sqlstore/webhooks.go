package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

var _ courier.WebhookStore = (*Store)(nil)

func errNoEndpoint() error { return errs.New(courier.CodeNotFound, "no such webhook endpoint") }

const endpointColumns = `id, account_id, url, event_types, description, disabled, disabled_reason, created_at, updated_at`

func scanEndpoint(sc interface{ Scan(...any) error }) (courier.Endpoint, error) {
	var e courier.Endpoint
	var types string
	var created, updated sqldb.TimeValue
	if err := sc.Scan(&e.ID, &e.AccountID, &e.URL, &types, &e.Description, &e.Disabled, &e.DisabledReason, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
		return e, fmt.Errorf("webhook_endpoints.event_types: %w", err)
	}
	e.CreatedAt, e.UpdatedAt = time.Time(created), time.Time(updated)
	return e, nil
}

// CreateEndpoint implements courier.WebhookStore.
func (s *Store) CreateEndpoint(ctx context.Context, e courier.Endpoint, sealedSecret []byte) (courier.Endpoint, error) {
	types, _ := json.Marshal(e.EventTypes)
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		e.CreatedAt, e.UpdatedAt = tx.Now, tx.Now
		_, err := tx.Exec(ctx, `
			INSERT INTO webhook_endpoints (id, account_id, url, event_types, description, secret_sealed, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, e.ID, e.AccountID, e.URL, string(types), e.Description, sealedSecret, tx.Now)
		return err
	})
	return e, err
}

// Endpoints implements courier.WebhookStore.
func (s *Store) Endpoints(ctx context.Context, accountID string) ([]courier.Endpoint, error) {
	rows, err := s.db.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []courier.Endpoint{}
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Endpoint implements courier.WebhookStore.
func (s *Store) Endpoint(ctx context.Context, accountID, id string) (courier.Endpoint, error) {
	e, err := scanEndpoint(s.db.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, id, accountID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, errNoEndpoint()
	}
	return e, err
}

// UpdateEndpoint implements courier.WebhookStore. Enabling an endpoint
// again clears its failure clock.
func (s *Store) UpdateEndpoint(ctx context.Context, accountID, id string, p courier.EndpointPatch) (courier.Endpoint, error) {
	var out courier.Endpoint
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		e, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE id = $1 AND account_id = $2`+tx.DB().ForUpdate(), id, accountID))
		if errors.Is(err, sql.ErrNoRows) {
			return errNoEndpoint()
		}
		if err != nil {
			return err
		}
		if p.URL != nil {
			e.URL = *p.URL
		}
		if p.EventTypes != nil {
			e.EventTypes = *p.EventTypes
		}
		if p.Description != nil {
			e.Description = strings.TrimSpace(*p.Description)
		}
		enabling := p.Disabled != nil && !*p.Disabled && e.Disabled
		if p.Disabled != nil {
			e.Disabled = *p.Disabled
			e.DisabledReason = ""
			if e.Disabled {
				e.DisabledReason = "disabled by an admin"
			}
		}
		e.UpdatedAt = tx.Now
		types, _ := json.Marshal(e.EventTypes)
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_endpoints SET url = $2, event_types = $3, description = $4, disabled = $5, disabled_reason = $6, updated_at = $7
			WHERE id = $1`, id, e.URL, string(types), e.Description, e.Disabled, e.DisabledReason, tx.Now); err != nil {
			return err
		}
		if enabling {
			if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1`, id); err != nil {
				return err
			}
		}
		if p.SealedSecret != nil {
			if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET secret_sealed = $2 WHERE id = $1`, id, p.SealedSecret); err != nil {
				return err
			}
		}
		out = e
		return nil
	})
	return out, err
}

// DeleteEndpoint implements courier.WebhookStore.
func (s *Store) DeleteEndpoint(ctx context.Context, accountID, id string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, id, accountID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoEndpoint()
		}
		return nil
	})
}

const deliveryColumns = `d.seq, d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at, d.created_at, d.updated_at`

func scanDelivery(sc interface{ Scan(...any) error }) (courier.Delivery, error) {
	var d courier.Delivery
	var next, created, updated sqldb.TimeValue
	if err := sc.Scan(&d.Seq, &d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Status, &d.Attempts, &next, &created, &updated); err != nil {
		return d, err
	}
	d.CreatedAt, d.UpdatedAt = time.Time(created), time.Time(updated)
	if d.Status == courier.DeliveryPending {
		t := time.Time(next)
		d.NextAttemptAt = &t
	}
	return d, nil
}

// Deliveries implements courier.WebhookStore.
func (s *Store) Deliveries(ctx context.Context, accountID, endpointID string, before int64, limit int) ([]courier.Delivery, error) {
	if before <= 0 {
		before = 1 << 62
	}
	rows, err := s.db.Query(ctx, `
		SELECT `+deliveryColumns+` FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.endpoint_id = $1 AND e.account_id = $2 AND d.seq < $3 ORDER BY d.seq DESC LIMIT $4`, endpointID, accountID, before, limit)
	if err != nil {
		return nil, err
	}
	out := []courier.Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Log, err = s.attempts(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) attempts(ctx context.Context, deliveryID string) ([]courier.DeliveryAttempt, error) {
	rows, err := s.db.Query(ctx, `SELECT at, status_code, latency_ms, response, error FROM webhook_attempts WHERE delivery_id = $1 ORDER BY seq`, deliveryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []courier.DeliveryAttempt{}
	for rows.Next() {
		var a courier.DeliveryAttempt
		var at sqldb.TimeValue
		var ms int64
		if err := rows.Scan(&at, &a.StatusCode, &ms, &a.Response, &a.Error); err != nil {
			return nil, err
		}
		a.At, a.Latency = time.Time(at), time.Duration(ms)*time.Millisecond
		out = append(out, a)
	}
	return out, rows.Err()
}

// RetryDelivery implements courier.WebhookStore.
func (s *Store) RetryDelivery(ctx context.Context, accountID, endpointID, id string) (courier.Delivery, error) {
	var d courier.Delivery
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $4, attempt_id = NULL, updated_at = $4
			WHERE id = $1 AND endpoint_id = $2 AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE account_id = $3)`,
			id, endpointID, accountID, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.New(courier.CodeNotFound, "no such delivery")
		}
		d, err = scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.id = $1`, id))
		return err
	})
	return d, err
}

// Enqueue is the stream consumer's handler: in the consumer's transaction
// (which has recorded the envelope ids), it adds one pending delivery per
// enabled endpoint of each event's account subscribed to the event's
// type. Set-wise, as deliveries come by the thousand a second: one read of
// the endpoints of the batch's accounts, one insert of its deliveries.
// The UNIQUE (endpoint, event) makes a repeat a no-op.
func Enqueue(ctx context.Context, tx *sqldb.Tx, batch []consumer.Event) error {
	var accounts []any
	seen := map[string]bool{}
	for _, e := range batch {
		if slices.Contains(courier.AccountEventTypes(), e.Type) && ids.Valid(e.Subject) && !seen[e.Subject] {
			seen[e.Subject] = true
			accounts = append(accounts, e.Subject)
		}
	}
	if len(accounts) == 0 {
		return nil
	}
	type endpoint struct {
		id    string
		types []string
	}
	endpoints := map[string][]endpoint{}
	rows, err := tx.Query(ctx, `SELECT id, account_id, event_types FROM webhook_endpoints
		WHERE account_id IN (`+placeholders(1, len(accounts))+`) AND NOT disabled`, accounts...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, account, types string
		if err := rows.Scan(&id, &account, &types); err != nil {
			rows.Close()
			return err
		}
		var list []string
		if json.Unmarshal([]byte(types), &list) == nil {
			endpoints[account] = append(endpoints[account], endpoint{id, list})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(endpoints) == 0 {
		return err
	}
	type delivery struct{ endpoint, eventID, eventType, body string }
	var deliveries []delivery
	for _, e := range batch {
		body := ""
		for _, ep := range endpoints[e.Subject] {
			if !slices.Contains(ep.types, e.Type) {
				continue
			}
			if body == "" {
				// MarshalJSON itself, not json.Marshal, which would check
				// and compact its output a second time.
				b, err := e.Envelope.MarshalJSON()
				if err != nil {
					return err
				}
				body = string(b)
			}
			deliveries = append(deliveries, delivery{ep.id, e.ID, e.Type, body})
		}
	}
	// At most deliveriesPerInsert rows a statement, so its parameters stay
	// within both engines' limits.
	for chunk := range slices.Chunk(deliveries, deliveriesPerInsert) {
		var q strings.Builder
		q.WriteString(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, body, status, next_attempt_at, created_at, updated_at) VALUES `)
		args := make([]any, 1, 1+5*len(chunk))
		args[0] = tx.Now
		for i, d := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, 'pending', $1, $1, $1)", n+1, n+2, n+3, n+4, n+5)
			args = append(args, ids.New(), d.endpoint, d.eventID, d.eventType, d.body)
		}
		q.WriteString(` ON CONFLICT (endpoint_id, event_id) DO NOTHING`)
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

const deliveriesPerInsert = 500

// ClaimDeliveries implements courier.WebhookStore: due pending deliveries
// of enabled endpoints, leased under one new attempt id for the claimed
// set (skip-locked on PostgreSQL, so replicas take disjoint sets). One
// select and one update whatever the batch, not a statement per delivery:
// on PostgreSQL each statement is a round trip.
func (s *Store) ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]courier.ClaimedDelivery, error) {
	var out []courier.ClaimedDelivery
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		out = out[:0]
		lock := ""
		if tx.DB().Engine == sqldb.Postgres {
			lock = " FOR UPDATE OF d SKIP LOCKED"
		}
		rows, err := tx.Query(ctx, `
			SELECT d.id, d.endpoint_id, e.url, d.event_id, d.body, e.secret_sealed, d.attempts
			FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND NOT e.disabled
			ORDER BY d.next_attempt_at LIMIT $2`+lock, tx.Now, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c courier.ClaimedDelivery
			var body string
			if err := rows.Scan(&c.ID, &c.EndpointID, &c.URL, &c.EventID, &body, &c.SealedSecret, &c.Attempts); err != nil {
				rows.Close()
				return err
			}
			c.Body = []byte(body)
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(out) == 0 {
			return err
		}
		attemptID := uuid.NewString()
		args := []any{attemptID, tx.Now.Add(lease), tx.Now}
		for i := range out {
			out[i].AttemptID = attemptID
			out[i].Attempts++
			args = append(args, out[i].ID)
		}
		_, err = tx.Exec(ctx, `
			UPDATE webhook_deliveries SET attempt_id = $1, attempts = attempts + 1, next_attempt_at = $2, updated_at = $3
			WHERE id IN (`+placeholders(4, len(out))+`)`, args...)
		return err
	})
	return out, err
}

// placeholders is "$from, $from+1, …", n of them.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// RecordAttempts implements courier.WebhookStore. One transaction for a
// whole batch: on SQLite every transaction serialises on the one writer,
// so a transaction per attempt capped deliveries at what the commits
// allowed. Successes, nearly every outcome, are recorded set-wise (an
// update per lease, one insert of their log rows, one update of their
// endpoints) before the failures, one by one: so an endpoint with a
// success and a failure in one batch starts its failure clock afresh.
func (s *Store) RecordAttempts(ctx context.Context, outcomes []courier.AttemptOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := recordSuccesses(ctx, tx, outcomes); err != nil {
			return err
		}
		for _, o := range outcomes {
			if o.OK {
				continue
			}
			if err := recordAttempt(ctx, tx, o); err != nil {
				return err
			}
		}
		return nil
	})
}

// recordSuccesses marks the successful deliveries whose lease their
// attempt still holds as succeeded, logs those attempts, and clears the
// failure clock of their endpoints that had one running.
func recordSuccesses(ctx context.Context, tx *sqldb.Tx, outcomes []courier.AttemptOutcome) error {
	byLease := map[string][]any{}
	var leases []string
	for _, o := range outcomes {
		if !o.OK {
			continue
		}
		l := o.Delivery.AttemptID
		if _, ok := byLease[l]; !ok {
			leases = append(leases, l)
			byLease[l] = []any{l, tx.Now}
		}
		byLease[l] = append(byLease[l], o.Delivery.ID)
	}
	held := map[string]bool{}
	for _, l := range leases {
		args := byLease[l]
		rows, err := tx.Query(ctx, `
			UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = $2, updated_at = $2
			WHERE attempt_id = $1 AND status = 'pending' AND id IN (`+placeholders(3, len(args)-2)+`)
			RETURNING id`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			held[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(held) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response, error) VALUES `)
	var args, endpoints []any
	seen := map[string]bool{}
	for _, o := range outcomes {
		d, a := o.Delivery, o.Attempt
		if !o.OK || !held[d.ID] {
			continue // a failure, or the lease passed to another attempt
		}
		if len(args) > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6)
		args = append(args, d.ID, sqldb.Timestamp(a.At), a.StatusCode, a.Latency.Milliseconds(), a.Response, a.Error)
		if !seen[d.EndpointID] {
			seen[d.EndpointID] = true
			endpoints = append(endpoints, d.EndpointID)
		}
	}
	if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
		return err
	}
	// Only when it was failing: a success to a healthy endpoint writes
	// nothing to the endpoint's row, which every delivery to it shares.
	_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL
		WHERE failing_since IS NOT NULL AND id IN (`+placeholders(1, len(endpoints))+`)`, endpoints...)
	return err
}

// recordAttempt records one failed attempt: retried at o.Next, or failed
// for good; the endpoint's failure clock starts, and after DisableAfter
// of failures the endpoint is disabled.
func recordAttempt(ctx context.Context, tx *sqldb.Tx, o courier.AttemptOutcome) error {
	d, a := o.Delivery, o.Attempt
	status, nextAt := courier.DeliveryFailed, tx.Now
	if o.Next != nil {
		status, nextAt = courier.DeliveryPending, sqldb.Timestamp(*o.Next)
	}
	res, err := tx.Exec(ctx, `
		UPDATE webhook_deliveries SET status = $3, next_attempt_at = $4, updated_at = $5
		WHERE id = $1 AND attempt_id = $2 AND status = 'pending'`, d.ID, d.AttemptID, status, nextAt, tx.Now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil // the lease passed to another attempt
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response, error) VALUES ($1, $2, $3, $4, $5, $6)`,
		d.ID, sqldb.Timestamp(a.At), a.StatusCode, a.Latency.Milliseconds(), a.Response, a.Error); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = $2 WHERE id = $1 AND failing_since IS NULL`, d.EndpointID, tx.Now); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		UPDATE webhook_endpoints SET disabled = true, disabled_reason = 'every delivery failed for 5 days', updated_at = $2
		WHERE id = $1 AND NOT disabled AND failing_since <= $3`, d.EndpointID, tx.Now, tx.Now.Add(-courier.DisableAfter))
	return err
}
