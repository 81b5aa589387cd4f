// Package sqlstore is billing.Store on both engines over sqldb.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
)

// Store implements billing.Store.
type Store struct {
	db *sqldb.DB
}

var _ billing.Store = (*Store)(nil)

// New returns a store over db, whose schema must be migrated.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// DB is the store's database.
func (s *Store) DB() *sqldb.DB { return s.db }

func notFound() error { return billing.NotFound() }

// null is nil for an empty string, so an absent uuid is NULL.
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// writeEvents appends events to the outbox in tx: the envelope id is fixed
// here and reused by every delivery attempt.
func writeEvents(ctx context.Context, tx *sqldb.Tx, evs ...billing.Event) error {
	for _, e := range evs {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("outbox: encode %s: %w", e.Type, err)
		}
		if err := tx.Queue(ctx, `
			INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at, traceparent)
			VALUES ($1, $2, 'billing', $3, $4, $5, $4, $4, $6)`,
			ids.New(), e.Type, e.Subject, tx.Now, string(data), events.OutboxTraceparent(ctx)); err != nil {
			return fmt.Errorf("outbox: insert %s: %w", e.Type, err)
		}
	}
	return nil
}

const planColumns = `id, name, products, amount, currency, interval, trial_days, version_range, active, processor_price_id, created_at, updated_at, meter`

type scanner interface{ Scan(dest ...any) error }

func scanPlan(r scanner) (billing.Plan, error) {
	var p billing.Plan
	var prods string
	err := r.Scan(&p.ID, &p.Name, &prods, &p.Amount, &p.Currency, &p.Interval, &p.TrialDays, &p.VersionRange, &p.Active,
		&p.ProcessorPriceID, (*sqldb.TimeValue)(&p.CreatedAt), (*sqldb.TimeValue)(&p.UpdatedAt), &p.Meter)
	p.Products = strings.Split(prods, ",")
	return p, err
}

// CreatePlan implements billing.Store.
func (s *Store) CreatePlan(ctx context.Context, p billing.Plan) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		p.CreatedAt, p.UpdatedAt = tx.Now, tx.Now
		_, err := tx.Exec(ctx, `INSERT INTO plans (`+planColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)`,
			p.ID, p.Name, strings.Join(p.Products, ","), p.Amount, p.Currency, p.Interval, p.TrialDays, p.VersionRange, p.Active,
			p.ProcessorPriceID, tx.Now, p.Meter)
		if sqldb.IsUniqueViolation(err) {
			return errs.New(billing.CodeConflict, "a plan with this id exists")
		}
		if err != nil {
			return err
		}
		return writeEvents(ctx, tx, billing.PlanEvent(billing.TypePlanCreated, p))
	})
}

// UpdatePlan implements billing.Store.
func (s *Store) UpdatePlan(ctx context.Context, id string, change func(*billing.Plan) (bool, error)) (billing.Plan, error) {
	var out billing.Plan
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		p, err := scanPlan(tx.QueryRow(ctx, `SELECT `+planColumns+` FROM plans WHERE id = $1`+tx.DB().ForUpdate(), id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound()
		}
		if err != nil {
			return err
		}
		changed, err := change(&p)
		if err != nil || !changed {
			out = p
			return err
		}
		p.UpdatedAt = tx.Now
		if _, err := tx.Exec(ctx, `
			UPDATE plans SET name = $2, products = $3, amount = $4, interval = $5, trial_days = $6, version_range = $7,
				active = $8, processor_price_id = $9, updated_at = $10, meter = $11 WHERE id = $1`,
			p.ID, p.Name, strings.Join(p.Products, ","), p.Amount, p.Interval, p.TrialDays, p.VersionRange, p.Active,
			p.ProcessorPriceID, tx.Now, p.Meter); err != nil {
			return err
		}
		out = p
		return writeEvents(ctx, tx, billing.PlanEvent(billing.TypePlanUpdated, p))
	})
	return out, err
}

// Plan implements billing.Store.
func (s *Store) Plan(ctx context.Context, id string) (billing.Plan, error) {
	p, err := scanPlan(s.db.QueryRow(ctx, `SELECT `+planColumns+` FROM plans WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound()
	}
	return p, err
}

// Plans implements billing.Store.
func (s *Store) Plans(ctx context.Context, activeOnly bool) ([]billing.Plan, error) {
	q := `SELECT ` + planColumns + ` FROM plans`
	if activeOnly {
		q += ` WHERE active`
	}
	return scanAll(scanPlan)(s.db.Query(ctx, q+` ORDER BY created_at, id`))
}

// scanAll reads every row of a query with scan, closing the rows; an empty
// result is an empty, non-nil slice.
func scanAll[T any](scan func(scanner) (T, error)) func(rows *sql.Rows, err error) ([]T, error) {
	return func(rows *sql.Rows, err error) ([]T, error) {
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := []T{}
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, rows.Err()
	}
}

func scanCustomer(r scanner) (billing.Customer, error) {
	var c billing.Customer
	err := r.Scan(&c.ID, &c.AccountID, &c.ProcessorCustomerID, &c.Email, (*sqldb.TimeValue)(&c.CreatedAt))
	return c, err
}

const customerColumns = `id, account_id, processor_customer_id, email, created_at`

// Customer implements billing.Store.
func (s *Store) Customer(ctx context.Context, accountID string) (billing.Customer, error) {
	c, err := scanCustomer(s.db.QueryRow(ctx, `SELECT `+customerColumns+` FROM customers WHERE account_id = $1`, accountID))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound()
	}
	return c, err
}

// CreateCustomer implements billing.Store.
func (s *Store) CreateCustomer(ctx context.Context, c billing.Customer) (billing.Customer, bool, error) {
	created := false
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		c.CreatedAt = tx.Now
		res, err := tx.Exec(ctx, `INSERT INTO customers (`+customerColumns+`) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id) DO NOTHING`,
			c.ID, c.AccountID, c.ProcessorCustomerID, c.Email, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			c, err = scanCustomer(tx.QueryRow(ctx, `SELECT `+customerColumns+` FROM customers WHERE account_id = $1`, c.AccountID))
			return err
		}
		created = true
		return writeEvents(ctx, tx, billing.CustomerEvent(c))
	})
	return c, created, err
}

const checkoutColumns = `id, account_id, plan_id, user_id, buyer_role, buyer_email, processor_checkout_id, url, expires_at, created_at`

func scanCheckout(r scanner) (billing.Checkout, error) {
	var c billing.Checkout
	err := r.Scan(&c.ID, &c.AccountID, &c.PlanID, &c.UserID, &c.BuyerRole, &c.BuyerEmail, &c.ProcessorCheckoutID, &c.URL,
		(*sqldb.TimeValue)(&c.ExpiresAt), (*sqldb.TimeValue)(&c.CreatedAt))
	return c, err
}

// CreateCheckout implements billing.Store.
func (s *Store) CreateCheckout(ctx context.Context, c billing.Checkout, key string) (billing.Checkout, bool, error) {
	created := false
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		c.CreatedAt = tx.Now
		c.ExpiresAt = sqldb.Timestamp(c.ExpiresAt)
		res, err := tx.Exec(ctx, `INSERT INTO checkouts (`+checkoutColumns+`, idempotency_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (account_id, idempotency_key) DO NOTHING`,
			c.ID, c.AccountID, c.PlanID, c.UserID, c.BuyerRole, c.BuyerEmail, c.ProcessorCheckoutID, c.URL, c.ExpiresAt, tx.Now, null(key))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			c, err = scanCheckout(tx.QueryRow(ctx, `SELECT `+checkoutColumns+` FROM checkouts WHERE account_id = $1 AND idempotency_key = $2`,
				c.AccountID, key))
			return err
		}
		created = true
		return nil
	})
	return c, created, err
}

// CheckoutByKey implements billing.Store.
func (s *Store) CheckoutByKey(ctx context.Context, accountID, key string) (billing.Checkout, error) {
	c, err := scanCheckout(s.db.QueryRow(ctx, `SELECT `+checkoutColumns+` FROM checkouts WHERE account_id = $1 AND idempotency_key = $2`,
		accountID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound()
	}
	return c, err
}

// Apply implements billing.Store: the event's id is inserted first, so a
// concurrent replay waits on the unique key (PostgreSQL) or the write lock
// (SQLite) and then finds it; the state change, its outbox rows and the
// outcome commit together.
func (s *Store) Apply(ctx context.Context, ev billing.ProcessorEvent, apply func(billing.StateTx) (billing.Outcome, error)) (bool, error) {
	duplicate := false
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO processor_events (id, type, created, outcome, received_at) VALUES ($1, $2, $3, 'ignored', $4)
			ON CONFLICT (id) DO NOTHING`, ev.ID, ev.Type, ev.Created, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			duplicate = true
			return nil
		}
		outcome, err := apply(&stateTx{tx: tx})
		if err != nil {
			return err
		}
		// Queued: sent with the state's writes before the commit.
		return tx.Queue(ctx, `UPDATE processor_events SET outcome = $2 WHERE id = $1`, ev.ID, string(outcome))
	})
	return duplicate, err
}

// ProcessorEvent is one recorded processor event (for tests and staff).
type ProcessorEvent struct {
	ID, Type, Outcome string
	Created           int64
}

// ProcessorEvents lists recorded processor events, oldest first.
func (s *Store) ProcessorEvents(ctx context.Context) ([]ProcessorEvent, error) {
	rows, err := s.db.Query(ctx, `SELECT id, type, outcome, created FROM processor_events ORDER BY received_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ProcessorEvent
	for rows.Next() {
		var e ProcessorEvent
		if err := rows.Scan(&e.ID, &e.Type, &e.Outcome, &e.Created); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// stateTx is billing.StateTx over one transaction.
type stateTx struct{ tx *sqldb.Tx }

func (t *stateTx) Now() time.Time { return t.tx.Now }

func (t *stateTx) PlanByID(ctx context.Context, id string) (billing.Plan, bool, error) {
	if !billing.ValidUUID(id) {
		return billing.Plan{}, false, nil
	}
	return found(scanPlan(t.tx.ReadRow(ctx, `SELECT `+planColumns+` FROM plans WHERE id = $1`, id)))
}

func (t *stateTx) PlanByPrice(ctx context.Context, priceID string) (billing.Plan, bool, error) {
	return found(scanPlan(t.tx.ReadRow(ctx, `SELECT `+planColumns+` FROM plans WHERE processor_price_id = $1
		ORDER BY updated_at DESC LIMIT 1`, priceID)))
}

func (t *stateTx) CustomerByProcessor(ctx context.Context, id string) (billing.Customer, bool, error) {
	return found(scanCustomer(t.tx.ReadRow(ctx, `SELECT `+customerColumns+` FROM customers WHERE processor_customer_id = $1`, id)))
}

func (t *stateTx) CheckoutLookup(ctx context.Context, paymentID, planID, sessionID string) (billing.CheckoutLookup, error) {
	var out billing.CheckoutLookup
	reads := []sqldb.Read{
		{Query: `SELECT 1 FROM payments WHERE processor_payment_id = $1`, Args: []any{paymentID}},
		{Query: `SELECT ` + checkoutColumns + ` FROM checkouts WHERE processor_checkout_id = $1`, Args: []any{sessionID}},
	}
	if billing.ValidUUID(planID) {
		reads = append(reads, sqldb.Read{Query: `SELECT ` + planColumns + ` FROM plans WHERE id = $1`, Args: []any{planID}})
	}
	// One pipeline on PostgreSQL (one round trip for the three).
	rows := t.tx.ReadRows(ctx, reads...)
	var one int
	_, ok, err := found(one, rows[0].Scan(&one))
	if err != nil {
		return out, err
	}
	out.PaymentRecorded = ok
	co, ok, err := found(scanCheckout(rows[1]))
	if err != nil {
		return out, err
	}
	if ok {
		out.Checkout = &co
	}
	if len(rows) > 2 {
		p, ok, err := found(scanPlan(rows[2]))
		if err != nil {
			return out, err
		}
		if ok {
			out.Plan = &p
		}
	}
	return out, nil
}

// found turns sql.ErrNoRows into ok false.
func found[T any](v T, err error) (T, bool, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return v, false, nil
	}
	return v, err == nil, err
}

const paymentColumns = `id, processor_payment_id, coalesce(CAST(account_id AS TEXT), ''), coalesce(CAST(plan_id AS TEXT), ''), kind, amount, amount_refunded, currency,
	status, email, coalesce(checkout_session_id, ''), coalesce(invoice_id, ''), coalesce(subscription_id, ''), last_event_created,
	created_at, updated_at, coalesce(payment_intent_id, '')`

func scanPayment(r scanner) (billing.Payment, error) {
	var p billing.Payment
	err := r.Scan(&p.ID, &p.ProcessorPaymentID, &p.AccountID, &p.PlanID, &p.Kind, &p.Amount, &p.AmountRefunded, &p.Currency,
		&p.Status, &p.Email, &p.CheckoutSessionID, &p.InvoiceID, &p.SubscriptionID, &p.LastEventCreated,
		(*sqldb.TimeValue)(&p.CreatedAt), (*sqldb.TimeValue)(&p.UpdatedAt), &p.PaymentIntentID)
	return p, err
}

func (t *stateTx) Payment(ctx context.Context, pid string) (billing.Payment, bool, error) {
	return found(scanPayment(t.tx.ReadRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE processor_payment_id = $1`, pid)))
}

func (t *stateTx) SavePayment(ctx context.Context, p *billing.Payment) error {
	p.UpdatedAt = t.tx.Now
	if p.ID == "" {
		p.ID, p.CreatedAt = ids.New(), t.tx.Now
		return t.tx.Queue(ctx, `INSERT INTO payments (id, processor_payment_id, account_id, plan_id, kind, amount, amount_refunded,
			currency, status, email, checkout_session_id, invoice_id, subscription_id, last_event_created, created_at, updated_at,
			payment_intent_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16)`,
			p.ID, p.ProcessorPaymentID, null(p.AccountID), null(p.PlanID), p.Kind, p.Amount, p.AmountRefunded, p.Currency, p.Status,
			p.Email, null(p.CheckoutSessionID), null(p.InvoiceID), null(p.SubscriptionID), p.LastEventCreated, t.tx.Now,
			null(p.PaymentIntentID))
	}
	return t.tx.Queue(ctx, `UPDATE payments SET account_id = $2, plan_id = $3, kind = $4, amount = $5, amount_refunded = $6,
		currency = $7, status = $8, email = $9, invoice_id = $10, subscription_id = $11, last_event_created = $12, updated_at = $13,
		payment_intent_id = $14
		WHERE id = $1`,
		p.ID, null(p.AccountID), null(p.PlanID), p.Kind, p.Amount, p.AmountRefunded, p.Currency, p.Status, p.Email,
		null(p.InvoiceID), null(p.SubscriptionID), p.LastEventCreated, t.tx.Now, null(p.PaymentIntentID))
}

func (t *stateTx) PaymentOfCharge(ctx context.Context, paymentIntentID, invoiceID string) (billing.Payment, bool, error) {
	if paymentIntentID != "" {
		p, ok, err := found(scanPayment(t.tx.ReadRow(ctx, `SELECT `+paymentColumns+` FROM payments
			WHERE processor_payment_id = $1 OR payment_intent_id = $1 ORDER BY created_at LIMIT 1`, paymentIntentID)))
		if ok || err != nil || invoiceID == "" {
			return p, ok, err
		}
	}
	if invoiceID == "" {
		return billing.Payment{}, false, nil
	}
	return found(scanPayment(t.tx.ReadRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE invoice_id = $1
		ORDER BY created_at LIMIT 1`, invoiceID)))
}

const subscriptionColumns = `id, processor_subscription_id, account_id, plan_id, status, current_period_end, last_event_created, created_at, updated_at`

func scanSubscription(r scanner) (billing.Subscription, error) {
	var s billing.Subscription
	var end sqldb.NullTime
	err := r.Scan(&s.ID, &s.ProcessorSubscriptionID, &s.AccountID, &s.PlanID, &s.Status, &end, &s.LastEventCreated,
		(*sqldb.TimeValue)(&s.CreatedAt), (*sqldb.TimeValue)(&s.UpdatedAt))
	s.CurrentPeriodEnd = end.Ptr()
	return s, err
}

func (t *stateTx) Subscription(ctx context.Context, pid string) (billing.Subscription, bool, error) {
	return found(scanSubscription(t.tx.ReadRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE processor_subscription_id = $1`+t.tx.DB().ForUpdate(), pid)))
}

func (t *stateTx) SaveSubscription(ctx context.Context, s *billing.Subscription) error {
	s.UpdatedAt = t.tx.Now
	var end any
	if s.CurrentPeriodEnd != nil {
		end = sqldb.Timestamp(*s.CurrentPeriodEnd)
	}
	if s.ID == "" {
		s.ID, s.CreatedAt = ids.New(), t.tx.Now
		_, err := t.tx.Exec(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
			s.ID, s.ProcessorSubscriptionID, s.AccountID, s.PlanID, s.Status, end, s.LastEventCreated, t.tx.Now)
		return err
	}
	_, err := t.tx.Exec(ctx, `UPDATE subscriptions SET account_id = $2, plan_id = $3, status = $4, current_period_end = $5,
		last_event_created = $6, updated_at = $7 WHERE id = $1`,
		s.ID, s.AccountID, s.PlanID, s.Status, end, s.LastEventCreated, t.tx.Now)
	return err
}

const invoiceColumns = `id, processor_invoice_id, account_id, coalesce(subscription_id, ''), amount_due, currency, status,
	coalesce(hosted_url, ''), coalesce(pdf_url, ''), created_at`

func scanInvoice(r scanner) (billing.Invoice, error) {
	var i billing.Invoice
	err := r.Scan(&i.ID, &i.ProcessorInvoiceID, &i.AccountID, &i.SubscriptionID, &i.AmountDue, &i.Currency, &i.Status,
		&i.HostedURL, &i.PDFURL, (*sqldb.TimeValue)(&i.CreatedAt))
	return i, err
}

func (t *stateTx) SaveInvoice(ctx context.Context, inv *billing.Invoice) (bool, error) {
	id := ids.New()
	res, err := t.tx.Exec(ctx, `INSERT INTO invoices (id, processor_invoice_id, account_id, subscription_id, amount_due, currency,
		status, hosted_url, pdf_url, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (processor_invoice_id) DO NOTHING`,
		id, inv.ProcessorInvoiceID, inv.AccountID, null(inv.SubscriptionID), inv.AmountDue, inv.Currency, inv.Status,
		null(inv.HostedURL), null(inv.PDFURL), t.tx.Now)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		got, err := scanInvoice(t.tx.ReadRow(ctx, `SELECT `+invoiceColumns+` FROM invoices WHERE processor_invoice_id = $1`, inv.ProcessorInvoiceID))
		*inv = got
		return false, err
	}
	inv.ID, inv.CreatedAt = id, t.tx.Now
	return true, nil
}

const reconciliationColumns = `id, coalesce(CAST(payment_id AS TEXT), ''), processor_event_id, coalesce(CAST(account_id AS TEXT), ''), coalesce(CAST(plan_id AS TEXT), ''), state,
	reason, facts, entitlement_ids, created_at, updated_at`

func scanReconciliation(r scanner) (billing.Reconciliation, error) {
	var rc billing.Reconciliation
	var facts, entIDs string
	err := r.Scan(&rc.ID, &rc.PaymentID, &rc.ProcessorEventID, &rc.AccountID, &rc.PlanID, &rc.State, &rc.Reason, &facts, &entIDs,
		(*sqldb.TimeValue)(&rc.CreatedAt), (*sqldb.TimeValue)(&rc.UpdatedAt))
	if err != nil {
		return rc, err
	}
	if err := json.Unmarshal([]byte(facts), &rc.Facts); err != nil {
		return rc, fmt.Errorf("reconciliation %s: facts: %w", rc.ID, err)
	}
	if entIDs != "" {
		if err := json.Unmarshal([]byte(entIDs), &rc.EntitlementIDs); err != nil {
			return rc, fmt.Errorf("reconciliation %s: entitlement ids: %w", rc.ID, err)
		}
	}
	return rc, nil
}

func (t *stateTx) ReconciliationOf(ctx context.Context, paymentID string) (billing.Reconciliation, bool, error) {
	return found(scanReconciliation(t.tx.ReadRow(ctx, `SELECT `+reconciliationColumns+` FROM reconciliations WHERE payment_id = $1`, paymentID)))
}

func (t *stateTx) SaveReconciliation(ctx context.Context, r *billing.Reconciliation) error {
	return saveReconciliation(ctx, t.tx, r)
}

func saveReconciliation(ctx context.Context, tx *sqldb.Tx, r *billing.Reconciliation) error {
	facts, err := json.Marshal(r.Facts)
	if err != nil {
		return err
	}
	entIDs := ""
	if len(r.EntitlementIDs) > 0 {
		b, _ := json.Marshal(r.EntitlementIDs)
		entIDs = string(b)
	}
	r.UpdatedAt = tx.Now
	if r.ID == "" {
		r.ID, r.CreatedAt = ids.New(), tx.Now
		return tx.Queue(ctx, `INSERT INTO reconciliations (id, payment_id, processor_event_id, account_id, plan_id, state, reason,
			facts, entitlement_ids, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			r.ID, null(r.PaymentID), r.ProcessorEventID, null(r.AccountID), null(r.PlanID), r.State, r.Reason, string(facts), entIDs, tx.Now)
	}
	return tx.Queue(ctx, `UPDATE reconciliations SET state = $2, reason = $3, facts = $4, entitlement_ids = $5, updated_at = $6
		WHERE id = $1`, r.ID, r.State, r.Reason, string(facts), entIDs, tx.Now)
}

func (t *stateTx) Emit(ctx context.Context, evs ...billing.Event) error {
	return writeEvents(ctx, t.tx, evs...)
}
