package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/sqldb"
)

var _ billing.InboxStore = (*Store)(nil)

// page adds the filters and the cursor (rows before the id, newest first)
// to q; args are appended from n.
func page(q string, args []any, conds map[string]string, order []string, before string, limit int) (string, []any) {
	where := ""
	for _, col := range order {
		v := conds[col]
		if v == "" {
			continue
		}
		args = append(args, v)
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		where += col + " = $" + strconv.Itoa(len(args))
	}
	if before != "" {
		args = append(args, before)
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		where += "id < $" + strconv.Itoa(len(args))
	}
	args = append(args, limit)
	return q + where + " ORDER BY id DESC LIMIT $" + strconv.Itoa(len(args)), args
}

// Reconciliations implements billing.InboxStore.
func (s *Store) Reconciliations(ctx context.Context, state, before string, limit int) ([]billing.InboxItem, error) {
	q, args := page(`SELECT `+reconciliationColumns+` FROM reconciliations`, nil, map[string]string{"state": state}, []string{"state"}, before, limit)
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var recs []billing.Reconciliation
	for rows.Next() {
		r, err := scanReconciliation(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]billing.InboxItem, 0, len(recs))
	for _, r := range recs {
		it, err := s.withPaymentAndPlan(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

func (s *Store) withPaymentAndPlan(ctx context.Context, r billing.Reconciliation) (billing.InboxItem, error) {
	it := billing.InboxItem{Reconciliation: r}
	if r.PaymentID != "" {
		p, err := scanPayment(s.db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1`, r.PaymentID))
		if err != nil {
			return it, err
		}
		it.Payment = &p
	}
	if r.PlanID != "" {
		p, err := scanPlan(s.db.QueryRow(ctx, `SELECT `+planColumns+` FROM plans WHERE id = $1`, r.PlanID))
		if err != nil {
			return it, err
		}
		it.Plan = &p
	}
	return it, nil
}

// InboxItem implements billing.InboxStore.
func (s *Store) InboxItem(ctx context.Context, id string) (billing.InboxItem, error) {
	r, err := scanReconciliation(s.db.QueryRow(ctx, `SELECT `+reconciliationColumns+` FROM reconciliations WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return billing.InboxItem{}, notFound()
	}
	if err != nil {
		return billing.InboxItem{}, err
	}
	return s.withPaymentAndPlan(ctx, r)
}

// SaveInboxItem implements billing.InboxStore: the update holds only while
// the item is still in state from, so two people granting at once grant
// once (the loser's box calls are answered 409 by box, which records them
// against the same payment reference).
func (s *Store) SaveInboxItem(ctx context.Context, r billing.Reconciliation, from string) error {
	facts, err := json.Marshal(r.Facts)
	if err != nil {
		return err
	}
	entIDs := ""
	if len(r.EntitlementIDs) > 0 {
		b, _ := json.Marshal(r.EntitlementIDs)
		entIDs = string(b)
	}
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE reconciliations SET state = $2, reason = $3, facts = $4, entitlement_ids = $5, updated_at = $6
			WHERE id = $1 AND state = $7`, r.ID, r.State, r.Reason, string(facts), entIDs, tx.Now, from)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.New(billing.CodeConflict, "the item changed meanwhile; reload it")
		}
		return nil
	})
}

// Payments implements billing.InboxStore.
func (s *Store) Payments(ctx context.Context, accountID, status, before string, limit int) ([]billing.Payment, error) {
	q, args := page(`SELECT `+paymentColumns+` FROM payments`, nil, map[string]string{"account_id": accountID, "status": status},
		[]string{"account_id", "status"}, before, limit)
	return scanAll(scanPayment)(s.db.Query(ctx, q, args...))
}

// Subscriptions implements billing.InboxStore.
func (s *Store) Subscriptions(ctx context.Context, accountID string) ([]billing.Subscription, error) {
	return scanAll(scanSubscription)(s.db.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE account_id = $1 ORDER BY id DESC`, accountID))
}

// Invoices implements billing.InboxStore.
func (s *Store) Invoices(ctx context.Context, accountID, before string, limit int) ([]billing.Invoice, error) {
	q, args := page(`SELECT `+invoiceColumns+` FROM invoices`, nil, map[string]string{"account_id": accountID}, []string{"account_id"}, before, limit)
	return scanAll(scanInvoice)(s.db.Query(ctx, q, args...))
}

// PaymentByID implements billing.InboxStore.
func (s *Store) PaymentByID(ctx context.Context, id string) (billing.Payment, error) {
	p, err := scanPayment(s.db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound()
	}
	return p, err
}
