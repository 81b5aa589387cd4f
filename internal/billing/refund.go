package billing

import (
	"context"

	"github.com/platformco/platform/internal/errs"
)

// RefundSpec is a refund to ask of the processor: Amount of the payment
// made by PaymentIntentID, whose Total was charged and AlreadyRefunded
// returned before.
type RefundSpec struct {
	PaymentIntentID string
	Amount          int64
	Currency        string
	Total           int64
	AlreadyRefunded int64
	IdempotencyKey  string
}

// Refund is a refund the processor accepted; the payment's state changes
// when the processor's charge.refunded arrives, as for a refund made on
// its dashboard.
type Refund struct {
	ID        string
	PaymentID string
	Amount    int64
	Currency  string
}

// Refund asks the processor to return amount (the JSON text; nil refunds
// what remains) of a payment to its payer (staff). The payment's state,
// the billing.payment.refunded event and a granted item's turn to
// needs_attention follow from the processor's charge.refunded.
// idempotencyKey, when set, goes to the processor. Errors: not_found,
// conflict (nothing left to refund, or no PaymentIntent known),
// validation_failed, unavailable.
func (in *Inbox) Refund(ctx context.Context, _ Staff, paymentID string, amount *string, idempotencyKey string) (Refund, error) {
	if !ValidUUID(paymentID) {
		return Refund{}, NotFound()
	}
	p, err := in.store.PaymentByID(ctx, paymentID)
	if err != nil {
		return Refund{}, err
	}
	if p.Status != PaymentSucceeded && p.Status != PaymentPartiallyRefunded {
		return Refund{}, errs.New(CodeConflict, "only a settled payment can be refunded; this one is "+p.Status)
	}
	remaining := p.Amount - p.AmountRefunded
	if remaining <= 0 {
		return Refund{}, errs.New(CodeConflict, "this payment is refunded in full")
	}
	n := remaining
	if amount != nil {
		var pr problems
		n = pr.minor("amount", amount, remaining)
		if n == 0 && len(pr.Fields) == 0 {
			pr.Add("amount", "positive")
		}
		if err := pr.err(); err != nil {
			return Refund{}, err
		}
	}
	pi := p.ProcessorPaymentID
	if p.Kind == KindInvoice {
		pi = p.PaymentIntentID
	}
	if pi == "" {
		return Refund{}, errs.New(CodeConflict, "the processor named no PaymentIntent for this invoice payment; refund it on the processor's dashboard")
	}
	if len(idempotencyKey) > 200 {
		return Refund{}, (&problems{errs.Fields{{Field: "Idempotency-Key", Code: "too_long"}}}).err()
	}
	key := ""
	if idempotencyKey != "" {
		key = "refund-" + p.ID + "-" + idempotencyKey
	}
	id, err := in.svc.processor.Refund(ctx, RefundSpec{PaymentIntentID: pi, Amount: n, Currency: p.Currency, Total: p.Amount,
		AlreadyRefunded: p.AmountRefunded, IdempotencyKey: key})
	if err != nil {
		return Refund{}, err
	}
	return Refund{ID: id, PaymentID: p.ID, Amount: n, Currency: p.Currency}, nil
}
