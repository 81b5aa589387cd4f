package billing

import (
	"context"
	"strconv"

	"github.com/platformco/platform/internal/errs"
)

// Box grants and revokes entitlements through box's operator API with the
// staff caller's own token (billing never grants as itself).
type Box interface {
	// Grant asks box for one entitlement. A 409 (an active row exists)
	// returns conflict true with that row's id and reference.
	Grant(ctx context.Context, token string, g GrantSpec) (GrantResult, error)
	// Revoke revokes the entitlement with id.
	Revoke(ctx context.Context, token string, id int64) error
}

// GrantSpec is one operator grant (entitlements.md §1 step 5).
type GrantSpec struct {
	AccountID    string
	Product      string
	VersionRange *string
	Reference    string
}

// GrantResult is box's answer to a grant.
type GrantResult struct {
	EntitlementID int64
	Conflict      bool
	Reference     string
}

// SourceReconciledPayment is the grant's source.
const SourceReconciledPayment = "reconciled_payment"

// InboxStore is the inbox's persistence.
type InboxStore interface {
	// Reconciliations lists items newest first, after the cursor id.
	Reconciliations(ctx context.Context, state, before string, limit int) ([]InboxItem, error)
	// InboxItem reads one item with its payment and plan. Errors: not_found.
	InboxItem(ctx context.Context, id string) (InboxItem, error)
	// SaveInboxItem stores the item's state, reason, facts and entitlement
	// ids, if it is still in state from (optimistic: conflict otherwise).
	SaveInboxItem(ctx context.Context, r Reconciliation, from string) error
	// Payments lists payments newest first (all accounts when accountID
	// is empty).
	Payments(ctx context.Context, accountID, status, before string, limit int) ([]Payment, error)
	// Subscriptions and Invoices list an account's, newest first.
	Subscriptions(ctx context.Context, accountID string) ([]Subscription, error)
	Invoices(ctx context.Context, accountID, before string, limit int) ([]Invoice, error)
	// PaymentByID reads one payment by billing's id. Errors: not_found.
	PaymentByID(ctx context.Context, id string) (Payment, error)
}

// InboxItem is an item with what the console shows beside it.
type InboxItem struct {
	Reconciliation
	Payment *Payment
	Plan    *Plan
}

// Inbox is the reconciliation inbox (billing.md §5): the four facts
// shown, grants and revokes through box by a person.
type Inbox struct {
	store InboxStore
	box   Box
	svc   *Service
}

// NewInbox returns the inbox over store, box and the service's identity
// checks.
func NewInbox(store InboxStore, box Box, svc *Service) *Inbox {
	return &Inbox{store: store, box: box, svc: svc}
}

// Page limits.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

func pageArgs(cursor, limit string) (string, int, error) {
	n := DefaultPageSize
	var p problems
	if limit != "" {
		v, err := strconv.Atoi(limit)
		if err != nil || v < 1 || v > MaxPageSize {
			p.Add("limit", "out_of_range")
		}
		n = v
	}
	if cursor != "" && !ValidUUID(cursor) {
		p.Add("cursor", "invalid")
	}
	return cursor, n, p.err()
}

// List lists the inbox, optionally by state. Errors: validation_failed.
func (in *Inbox) List(ctx context.Context, _ Staff, state, cursor, limit string) ([]InboxItem, string, error) {
	switch state {
	case "", StateAwaitingGrant, StateGranted, StateNeedsAttention, StateRevoked:
	default:
		return nil, "", (&problems{errs.Fields{{Field: "state", Code: "one_of"}}}).err()
	}
	before, n, err := pageArgs(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	items, err := in.store.Reconciliations(ctx, state, before, n+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(items) > n {
		items, next = items[:n], items[n-1].ID
	}
	return items, next, nil
}

// Grant grants the item's products through box with the caller's token,
// once per product (source reconciled_payment, reference the processor's
// payment id, the plan's range), after checking again that the payment is
// settled. A box 409 for a row of another payment (the renewal rule)
// leaves the item needs_attention with both options named; box down is
// unavailable and the item stays awaiting_grant. Errors: not_found,
// conflict (not awaiting a grant, or no longer settled), unavailable.
func (in *Inbox) Grant(ctx context.Context, staff Staff, token, id string) (InboxItem, error) {
	it, err := in.item(ctx, id)
	if err != nil {
		return it, err
	}
	if it.State != StateAwaitingGrant {
		return it, errs.New(CodeConflict, "this item is "+it.State+", not awaiting a grant")
	}
	if it.Payment.Status != PaymentSucceeded {
		it.Facts.Settled = false
		it.State, it.Reason = StateNeedsAttention, ReasonFactsUnmet
		if err := in.store.SaveInboxItem(ctx, it.Reconciliation, StateAwaitingGrant); err != nil {
			return it, err
		}
		return it, errs.New(CodeConflict, "the payment is no longer settled ("+it.Payment.Status+"): nothing was granted")
	}
	var granted []int64
	for _, product := range it.Plan.Products {
		res, err := in.box.Grant(ctx, token, GrantSpec{AccountID: it.AccountID, Product: product,
			VersionRange: it.Plan.VersionRange, Reference: it.Payment.ProcessorPaymentID})
		if err != nil {
			return it, err
		}
		if res.Conflict && res.Reference != it.Payment.ProcessorPaymentID {
			// Renewal: the first row never expires (entitlements.md §1 step 9).
			it.State, it.Reason, it.EntitlementIDs = StateNeedsAttention, ReasonAlreadyEntitled, granted
			if err := in.store.SaveInboxItem(ctx, it.Reconciliation, StateAwaitingGrant); err != nil {
				return it, err
			}
			return it, errs.New(CodeConflict, "the account already holds an active "+product+
				" entitlement: leave it, or revoke it and grant again so the row names this payment")
		}
		granted = append(granted, res.EntitlementID)
	}
	it.State, it.Reason, it.EntitlementIDs = StateGranted, "", granted
	return it, in.store.SaveInboxItem(ctx, it.Reconciliation, StateAwaitingGrant)
}

// Revoke revokes the item's entitlements through box with the caller's
// token (refund or dispute: revoke first). Errors: not_found, conflict
// (nothing granted), unavailable.
func (in *Inbox) Revoke(ctx context.Context, staff Staff, token, id string) (InboxItem, error) {
	it, err := in.item(ctx, id)
	if err != nil {
		return it, err
	}
	if len(it.EntitlementIDs) == 0 || it.State == StateRevoked {
		return it, errs.New(CodeConflict, "this item has no granted entitlement to revoke")
	}
	for _, eid := range it.EntitlementIDs {
		if err := in.box.Revoke(ctx, token, eid); err != nil {
			return it, err
		}
	}
	from := it.State
	it.State, it.Reason = StateRevoked, ""
	return it, in.store.SaveInboxItem(ctx, it.Reconciliation, from)
}

func (in *Inbox) item(ctx context.Context, id string) (InboxItem, error) {
	if !ValidUUID(id) {
		return InboxItem{}, NotFound()
	}
	it, err := in.store.InboxItem(ctx, id)
	if err != nil {
		return it, err
	}
	if it.Payment == nil || it.Plan == nil || it.AccountID == "" {
		if it.State == StateAwaitingGrant {
			return it, errs.New(CodeConflict, "this item names no payment, plan or account to grant")
		}
	}
	return it, nil
}

// Payments lists payments for staff. Errors: validation_failed.
func (in *Inbox) Payments(ctx context.Context, _ Staff, status, cursor, limit string) ([]Payment, string, error) {
	switch status {
	case "", PaymentSucceeded, PaymentFailed, PaymentRefunded, PaymentPartiallyRefunded, PaymentDisputed:
	default:
		return nil, "", (&problems{errs.Fields{{Field: "status", Code: "one_of"}}}).err()
	}
	return in.payments(ctx, "", status, cursor, limit)
}

func (in *Inbox) payments(ctx context.Context, accountID, status, cursor, limit string) ([]Payment, string, error) {
	before, n, err := pageArgs(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	ps, err := in.store.Payments(ctx, accountID, status, before, n+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(ps) > n {
		ps, next = ps[:n], ps[n-1].ID
	}
	return ps, next, nil
}

// MoneyState is an account's billing page.
type MoneyState struct {
	Customer      *Customer
	Subscriptions []Subscription
	Payments      []Payment
	NextPayments  string
	Invoices      []Invoice
	NextInvoices  string
}

// AccountState is what a member of the account reads (billing.md §5).
// Errors: unauthenticated, not_found, validation_failed, unavailable.
func (in *Inbox) AccountState(ctx context.Context, token, accountID, paymentsCursor, invoicesCursor string) (MoneyState, error) {
	m, err := in.svc.Member(ctx, token, accountID)
	if err != nil {
		return MoneyState{}, err
	}
	var st MoneyState
	if c, err := in.svc.store.Customer(ctx, m.AccountID); err == nil {
		st.Customer = &c
	} else if errs.Code(err) != CodeNotFound {
		return st, err
	}
	if st.Subscriptions, err = in.store.Subscriptions(ctx, m.AccountID); err != nil {
		return st, err
	}
	if st.Payments, st.NextPayments, err = in.payments(ctx, m.AccountID, "", paymentsCursor, ""); err != nil {
		return st, err
	}
	before, n, err := pageArgs(invoicesCursor, "")
	if err != nil {
		return st, err
	}
	if st.Invoices, err = in.store.Invoices(ctx, m.AccountID, before, n+1); err != nil {
		return st, err
	}
	if len(st.Invoices) > n {
		st.Invoices, st.NextInvoices = st.Invoices[:n], st.Invoices[n-1].ID
	}
	return st, nil
}
