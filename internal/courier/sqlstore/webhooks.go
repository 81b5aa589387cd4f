package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
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

const deliveryColumns = `d.seq, d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.waiting, d.attempts, d.next_attempt_at, d.created_at, d.updated_at`

func scanDelivery(sc interface{ Scan(...any) error }) (courier.Delivery, error) {
	var d courier.Delivery
	var next, created, updated sqldb.TimeValue
	if err := sc.Scan(&d.Seq, &d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Status, &d.Waiting, &d.Attempts, &next, &created, &updated); err != nil {
		return d, err
	}
	d.CreatedAt, d.UpdatedAt = time.Time(created), time.Time(updated)
	if d.Status == courier.DeliveryPending && !d.Waiting {
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
	rows, err := s.db.Query(ctx, `SELECT at, status_code, latency_ms, response, error_category, error FROM webhook_attempts WHERE delivery_id = $1 ORDER BY seq`, deliveryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []courier.DeliveryAttempt{}
	for rows.Next() {
		var a courier.DeliveryAttempt
		var at sqldb.TimeValue
		var ms int64
		if err := rows.Scan(&at, &a.StatusCode, &ms, &a.Response, &a.ErrorCategory, &a.Error); err != nil {
			return nil, err
		}
		a.At, a.Latency = time.Time(at), time.Duration(ms)*time.Millisecond
		out = append(out, a)
	}
	return out, rows.Err()
}

// RetryDelivery implements courier.WebhookStore. The delivery is due at
// once, but still after any earlier pending delivery of its queue: the
// claim keeps the order whatever the waiting flag says.
func (s *Store) RetryDelivery(ctx context.Context, accountID, endpointID, id string) (courier.Delivery, error) {
	var d courier.Delivery
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET status = 'pending', waiting = false, next_attempt_at = $4, attempt_id = NULL, updated_at = $4
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
// the endpoints of the batch's accounts, one insert of its deliveries,
// one promotion of its queues' heads. The UNIQUE (endpoint, event) makes
// a repeat a no-op.
//
// Each delivery joins its queue, (endpoint, subject), at the event's
// stream sequence, waiting; then the earliest pending delivery of each
// queue the batch touched stops waiting. Under the queues' locks, which
// the settling of a delivery takes too, so a delivery never waits behind
// one that settled without promoting it.
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
	type delivery struct {
		id, endpoint, eventID, eventType, subject, body string
		seq                                             uint64
	}
	var deliveries []delivery
	var queues []queue
	seenQueue := map[queue]bool{}
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
			d := delivery{ids.New(), ep.id, e.ID, e.Type, e.Subject, body, e.Seq}
			deliveries = append(deliveries, d)
			q := queue{ep.id, e.Subject}
			if !seenQueue[q] {
				seenQueue[q] = true
				queues = append(queues, q)
			}
		}
	}
	if len(deliveries) == 0 {
		return nil
	}
	if err := lockQueues(ctx, tx, queues); err != nil {
		return err
	}
	// At most deliveriesPerInsert rows a statement, so its parameters stay
	// within both engines' limits.
	for chunk := range slices.Chunk(deliveries, deliveriesPerInsert) {
		var q strings.Builder
		q.WriteString(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, subject, stream_seq, body, status, waiting, next_attempt_at, created_at, updated_at) VALUES `)
		args := make([]any, 1, 1+7*len(chunk))
		args[0] = tx.Now
		for i, d := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, 'pending', true, $1, $1, $1)", n+1, n+2, n+3, n+4, n+5, n+6, n+7)
			args = append(args, d.id, d.endpoint, d.eventID, d.eventType, d.subject, int64(d.seq), d.body)
		}
		q.WriteString(` ON CONFLICT (endpoint_id, event_id) DO NOTHING`)
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return promoteHeads(ctx, tx, queues)
}

// queue is the unit of webhook order: an endpoint and an event subject.
type queue struct{ endpoint, subject string }

// queueLockClass is the first key of the PostgreSQL advisory locks on
// webhook queues, so they cannot be taken for another purpose's lock.
const queueLockClass = 0x77686b71 // "whkq"

// lockQueues holds the queues, until the transaction ends, against the
// other transactions that add to them or settle their deliveries: on
// PostgreSQL by an advisory lock per queue (a 32-bit hash of it; two
// queues that share one merely wait for each other), taken in the keys'
// order so two transactions never wait on each other in a cycle. SQLite's
// transactions hold the database's write lock already.
func lockQueues(ctx context.Context, tx *sqldb.Tx, queues []queue) error {
	if tx.DB().Engine != sqldb.Postgres || len(queues) == 0 {
		return nil
	}
	keys := make([]int32, 0, len(queues))
	for _, q := range queues {
		h := fnv.New32a()
		h.Write([]byte(q.endpoint))
		h.Write([]byte{0})
		h.Write([]byte(q.subject))
		keys = append(keys, int32(h.Sum32()))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var list strings.Builder
	list.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(strconv.Itoa(int(k)))
	}
	list.WriteByte('}')
	// The subquery's ORDER BY hands the keys to the lock calls in order.
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, k) FROM (SELECT unnest($2::int4[]) AS k ORDER BY 1) AS keys`,
		queueLockClass, list.String())
	return err
}

// promoteHeads lets the earliest pending delivery of each of queues stop
// waiting: after deliveries joined them, or one of their deliveries
// settled. The caller holds the queues.
func promoteHeads(ctx context.Context, tx *sqldb.Tx, queues []queue) error {
	if len(queues) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`UPDATE webhook_deliveries SET waiting = false WHERE waiting AND id IN (`)
	args := make([]any, 0, 2*len(queues))
	for i, qu := range queues {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, `(SELECT id FROM webhook_deliveries WHERE endpoint_id = $%d AND subject = $%d AND status = 'pending' ORDER BY stream_seq, seq LIMIT 1)`,
			len(args)+1, len(args)+2)
		args = append(args, qu.endpoint, qu.subject)
	}
	q.WriteString(`)`)
	_, err := tx.Exec(ctx, q.String(), args...)
	return err
}

const deliveriesPerInsert = 500

// ClaimDeliveries implements courier.WebhookStore: due pending deliveries
// of enabled endpoints, leased under one new attempt id for the claimed
// set (skip-locked on PostgreSQL, so replicas take disjoint sets). One
// select and one update whatever the batch, not a statement per delivery:
// on PostgreSQL each statement is a round trip.
//
// Only a delivery that no earlier pending delivery of its queue precedes
// (in flight or waiting for its retry) is claimed: the waiting ones are
// not in the due index at all, and the NOT EXISTS, one probe of the
// queue index per candidate, holds the order for the rest (a manual
// retry, an event the stream handed over after a later one).
func (s *Store) ClaimDeliveries(ctx context.Context, limit int, lease time.Duration) ([]courier.ClaimedDelivery, error) {
	var out []courier.ClaimedDelivery
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		out = out[:0]
		lock := ""
		if tx.DB().Engine == sqldb.Postgres {
			lock = " FOR UPDATE OF d SKIP LOCKED"
		}
		rows, err := tx.Query(ctx, `
			SELECT d.id, d.endpoint_id, d.subject, e.url, d.event_id, d.body, e.secret_sealed, d.attempts
			FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND NOT d.waiting AND d.next_attempt_at <= $1 AND NOT e.disabled
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
				WHERE p.endpoint_id = d.endpoint_id AND p.subject = d.subject AND p.status = 'pending' AND p.stream_seq < d.stream_seq)
			ORDER BY d.next_attempt_at LIMIT $2`+lock, tx.Now, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c courier.ClaimedDelivery
			var body string
			if err := rows.Scan(&c.ID, &c.EndpointID, &c.Subject, &c.URL, &c.EventID, &body, &c.SealedSecret, &c.Attempts); err != nil {
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
// Last, the next delivery of each queue whose delivery settled (delivered
// or finally failed) stops waiting, under the queues' locks taken first.
func (s *Store) RecordAttempts(ctx context.Context, outcomes []courier.AttemptOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	var queues []queue
	seen := map[queue]bool{}
	for _, o := range outcomes {
		if !o.OK && o.Next != nil {
			continue
		}
		if q := (queue{o.Delivery.EndpointID, o.Delivery.Subject}); !seen[q] {
			seen[q] = true
			queues = append(queues, q)
		}
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		if err := lockQueues(ctx, tx, queues); err != nil {
			return err
		}
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
		return promoteHeads(ctx, tx, queues)
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
	q.WriteString(`INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response, error_category, error) VALUES `)
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
		fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7)
		args = append(args, d.ID, sqldb.Timestamp(a.At), a.StatusCode, a.Latency.Milliseconds(), a.Response, a.ErrorCategory, a.Error)
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
		INSERT INTO webhook_attempts (delivery_id, at, status_code, latency_ms, response, error_category, error) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		d.ID, sqldb.Timestamp(a.At), a.StatusCode, a.Latency.Milliseconds(), a.Response, a.ErrorCategory, a.Error); err != nil {
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

// HoldConsumerLease takes or renews the lease name for holder until ttl
// from now, and reports whether holder has it: it is free, expired, or
// holder's already. One statement, so two replicas racing for it cannot
// both win.
func (s *Store) HoldConsumerLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	held := false
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		rows, err := tx.Query(ctx, `
			INSERT INTO webhook_consumer_lease (name, holder, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE webhook_consumer_lease.holder = excluded.holder OR webhook_consumer_lease.expires_at <= $4
			RETURNING holder`, name, holder, tx.Now.Add(ttl), tx.Now)
		if err != nil {
			return err
		}
		held = rows.Next()
		rows.Close()
		return rows.Err()
	})
	return held && err == nil, err
}

// ReleaseConsumerLease gives the lease up if holder has it, so another
// replica takes it at once rather than when it expires.
func (s *Store) ReleaseConsumerLease(ctx context.Context, name, holder string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM webhook_consumer_lease WHERE name = $1 AND holder = $2`, name, holder)
	return err
}
