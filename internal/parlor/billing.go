package parlor

import (
	"net/http"
	"net/url"
)

// The billing pages: the public storefront, the account's Billing page
// with its buy buttons, and the console's Payments inbox and Plans.

type pricingData struct{ Plans []BillingPlan }

// pricing is the storefront: the active plans, to anyone.
func (s *server) pricing(w http.ResponseWriter, r *http.Request) {
	sess, err := s.currentSession(w, r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	var me *Me
	if sess != nil {
		me = &sess.Me
	}
	plans, err := s.api.Plans(r.Context())
	if err != nil {
		s.fail(w, r, me, err)
		return
	}
	s.render(w, r, http.StatusOK, "pricing", &page{Title: "Pricing", User: me, Data: pricingData{Plans: plans}})
}

type billingData struct {
	Plans []BillingPlan
	State MoneyState
	// CanBuy is an owner or admin of a team account.
	CanBuy bool
	// PlanNames names plans by id for the subscriptions table.
	PlanNames map[string]string
}

func (s *server) billing(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderBilling(w, r, sess, &page{Notice: billingNotice(r.URL.Query().Get("checkout"))}, http.StatusOK)
}

func billingNotice(checkout string) string {
	switch checkout {
	case "success":
		return "Thank you: the payment is being recorded. An operator grants what you bought once they have checked it."
	case "canceled":
		return "The checkout was canceled; nothing was charged."
	}
	return ""
}

func (s *server) renderBilling(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	a, st, ok := withAccount(s, w, r, sess, s.api.AccountBilling)
	if !ok {
		return
	}
	plans, err := s.api.Plans(r.Context())
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	names := map[string]string{}
	for _, pl := range plans {
		names[pl.ID] = pl.Name
	}
	p.Title, p.User, p.Account, p.Tab = "Billing · "+a.Name, &sess.Me, a, "billing"
	p.Data = billingData{Plans: plans, State: st, CanBuy: !a.Personal && (a.Role == "owner" || a.Role == "admin"), PlanNames: names}
	s.render(w, r, status, "billing", p)
}

// buy starts a checkout and sends the buyer to the processor's page.
func (s *server) buy(w http.ResponseWriter, r *http.Request, sess *session) {
	to, err := s.api.Checkout(r.Context(), sess.Token, r.PathValue("id"), r.PostFormValue("plan_id"))
	if err != nil {
		p := &page{}
		status := formFailure(p, err)
		if status == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		s.renderBilling(w, r, sess, p, status)
		return
	}
	if u, err := url.Parse(to); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// inboxStates are the inbox's tabs, in the order shown.
var inboxStates = []string{"awaiting_grant", "needs_attention", "granted", "revoked"}

type paymentsData struct {
	State  string
	States []string
	Items  []Reconciliation
}

// operatorPayments is the reconciliation inbox: each settled payment with
// the four facts as ticks, and the grant and revoke buttons.
func (s *server) operatorPayments(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderPayments(w, r, sess, &page{Notice: paymentsNotice(r.URL.Query().Get("done"))}, http.StatusOK)
}

func paymentsNotice(done string) string {
	switch done {
	case "granted":
		return "Granted: box holds the entitlements."
	case "revoked":
		return "Revoked: box no longer entitles the account."
	}
	return ""
}

func (s *server) renderPayments(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int) {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "awaiting_grant"
	}
	items, err := s.api.Reconciliations(r.Context(), sess.Token, state)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p.Title, p.User, p.Tab = "Payments", &sess.Me, "payments"
	p.Data = paymentsData{State: state, States: inboxStates, Items: items}
	s.render(w, r, status, "operator_payments", p)
}

// reconcile grants or revokes an inbox item through billing, which calls
// box with the staff member's own token.
func (s *server) reconcile(action string) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		err := s.api.ReconciliationAction(r.Context(), sess.Token, r.PathValue("rid"), action)
		if err != nil {
			p := &page{}
			status := formFailure(p, err)
			if status == http.StatusNotFound {
				s.notFound(w, r, &sess.Me)
				return
			}
			s.renderPayments(w, r, sess, p, status)
			return
		}
		done := "granted"
		if action == "revoke" {
			done = "revoked"
		}
		http.Redirect(w, r, "/operator/payments?state="+done+"&done="+done, http.StatusSeeOther)
	}
}

type plansData struct{ Plans []BillingPlan }

// operatorPlans lists every plan, inactive ones too.
func (s *server) operatorPlans(w http.ResponseWriter, r *http.Request, sess *session) {
	plans, err := s.api.OperatorPlans(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	s.render(w, r, http.StatusOK, "operator_plans", &page{Title: "Plans", User: &sess.Me, Tab: "plans", Data: plansData{Plans: plans}})
}
