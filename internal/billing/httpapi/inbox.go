package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/httpx"
)

type paymentBody struct {
	ID                 string    `json:"id"`
	AccountID          *string   `json:"account_id"`
	PlanID             *string   `json:"plan_id"`
	Kind               string    `json:"kind"`
	Amount             int64     `json:"amount"`
	AmountRefunded     int64     `json:"amount_refunded"`
	Currency           string    `json:"currency"`
	Status             string    `json:"status"`
	Email              string    `json:"email"`
	ProcessorPaymentID string    `json:"processor_payment_id"`
	InvoiceID          *string   `json:"invoice_id"`
	SubscriptionID     *string   `json:"subscription_id"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func paymentOut(p billing.Payment) paymentBody {
	return paymentBody{p.ID, opt(p.AccountID), opt(p.PlanID), p.Kind, p.Amount, p.AmountRefunded, p.Currency, p.Status, p.Email,
		p.ProcessorPaymentID, opt(p.InvoiceID), opt(p.SubscriptionID), p.CreatedAt.UTC(), p.UpdatedAt.UTC()}
}

func paymentsOut(ps []billing.Payment) []paymentBody {
	out := make([]paymentBody, len(ps))
	for i, p := range ps {
		out[i] = paymentOut(p)
	}
	return out
}

type factsBody struct {
	AmountMatches bool     `json:"amount_matches"`
	OneTime       bool     `json:"one_time"`
	Products      []string `json:"products"`
	Settled       bool     `json:"settled"`
	TeamAccount   bool     `json:"team_account"`
	BuyerRole     string   `json:"buyer_role"`
	BuyerEmail    string   `json:"buyer_email"`
	PaymentEmail  string   `json:"payment_email"`
}

type itemBody struct {
	ID               string       `json:"id"`
	State            string       `json:"state"`
	Reason           *string      `json:"reason"`
	AccountID        *string      `json:"account_id"`
	Plan             *planBody    `json:"plan"`
	Payment          *paymentBody `json:"payment"`
	ProcessorEventID string       `json:"processor_event_id"`
	Facts            factsBody    `json:"facts"`
	EntitlementIDs   []int64      `json:"entitlement_ids"`
	CreatedAt        time.Time    `json:"created_at"`
	UpdatedAt        time.Time    `json:"updated_at"`
}

func itemOut(it billing.InboxItem) itemBody {
	f := it.Facts
	products := f.Products
	if products == nil {
		products = []string{}
	}
	out := itemBody{ID: it.ID, State: it.State, Reason: opt(it.Reason), AccountID: opt(it.AccountID), ProcessorEventID: it.ProcessorEventID,
		Facts:          factsBody{f.AmountMatches, f.OneTime, products, f.Settled, f.TeamAccount, f.BuyerRole, f.BuyerEmail, f.PaymentEmail},
		EntitlementIDs: it.EntitlementIDs, CreatedAt: it.CreatedAt.UTC(), UpdatedAt: it.UpdatedAt.UTC()}
	if out.EntitlementIDs == nil {
		out.EntitlementIDs = []int64{}
	}
	if it.Plan != nil {
		p := planOut(*it.Plan)
		out.Plan = &p
	}
	if it.Payment != nil {
		p := paymentOut(*it.Payment)
		out.Payment = &p
	}
	return out
}

func (h *handlers) reconciliations(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	q := r.URL.Query()
	items, next, err := h.inbox.List(r.Context(), staff, q.Get("state"), q.Get("cursor"), q.Get("limit"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	out := make([]itemBody, len(items))
	for i, it := range items {
		out[i] = itemOut(it)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"reconciliations": out, "next_cursor": opt(next)})
}

func (h *handlers) grant(w http.ResponseWriter, r *http.Request)  { h.act(w, r, h.inbox.Grant) }
func (h *handlers) revoke(w http.ResponseWriter, r *http.Request) { h.act(w, r, h.inbox.Revoke) }

// act runs a grant or a revoke with the caller's own token, which box
// checks again.
func (h *handlers) act(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, staff billing.Staff, token, id string) (billing.InboxItem, error)) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	it, err := do(r.Context(), staff, bearer(r), r.PathValue("id"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]itemBody{"reconciliation": itemOut(it)})
}

func (h *handlers) staffPayments(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	q := r.URL.Query()
	ps, next, err := h.inbox.Payments(r.Context(), staff, q.Get("status"), q.Get("cursor"), q.Get("limit"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"payments": paymentsOut(ps), "next_cursor": opt(next)})
}

type subscriptionBody struct {
	ID                      string     `json:"id"`
	ProcessorSubscriptionID string     `json:"processor_subscription_id"`
	PlanID                  string     `json:"plan_id"`
	Status                  string     `json:"status"`
	CurrentPeriodEnd        *time.Time `json:"current_period_end"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
}

type invoiceBody struct {
	ID                 string    `json:"id"`
	ProcessorInvoiceID string    `json:"processor_invoice_id"`
	SubscriptionID     *string   `json:"subscription_id"`
	AmountDue          int64     `json:"amount_due"`
	Currency           string    `json:"currency"`
	Status             string    `json:"status"`
	HostedInvoiceURL   *string   `json:"hosted_invoice_url"`
	InvoicePDF         *string   `json:"invoice_pdf"`
	CreatedAt          time.Time `json:"created_at"`
}

type customerBody struct {
	ID                  string    `json:"id"`
	ProcessorCustomerID string    `json:"processor_customer_id"`
	Email               string    `json:"email"`
	CreatedAt           time.Time `json:"created_at"`
}

func (h *handlers) accountBilling(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st, err := h.inbox.AccountState(r.Context(), bearer(r), r.PathValue("id"), q.Get("payments_cursor"), q.Get("invoices_cursor"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	var cust *customerBody
	if st.Customer != nil {
		cust = &customerBody{st.Customer.ID, st.Customer.ProcessorCustomerID, st.Customer.Email, st.Customer.CreatedAt.UTC()}
	}
	subs := make([]subscriptionBody, len(st.Subscriptions))
	for i, s := range st.Subscriptions {
		subs[i] = subscriptionBody{s.ID, s.ProcessorSubscriptionID, s.PlanID, s.Status, s.CurrentPeriodEnd, s.CreatedAt.UTC(), s.UpdatedAt.UTC()}
	}
	invs := make([]invoiceBody, len(st.Invoices))
	for i, v := range st.Invoices {
		invs[i] = invoiceBody{v.ID, v.ProcessorInvoiceID, opt(v.SubscriptionID), v.AmountDue, v.Currency, v.Status, opt(v.HostedURL), opt(v.PDFURL), v.CreatedAt.UTC()}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"customer": cust, "subscriptions": subs,
		"payments": paymentsOut(st.Payments), "payments_next_cursor": opt(st.NextPayments),
		"invoices": invs, "invoices_next_cursor": opt(st.NextInvoices)})
}
