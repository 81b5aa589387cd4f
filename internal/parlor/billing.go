package parlor

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

type checkoutData struct {
	URL, Host, AccountID, Account, Plan string
}

// buy starts a checkout and shows the link to the processor's page. It
// is a link, not a redirect: the page's Content-Security-Policy holds a
// form's redirects to form-action 'self', which a browser applies to the
// processor's origin too (Stripe's hosted checkout, the test processor).
func (s *server) buy(w http.ResponseWriter, r *http.Request, sess *session) {
	planID := r.PostFormValue("plan_id")
	to, err := s.api.Checkout(r.Context(), sess.Token, r.PathValue("id"), planID)
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
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		s.fail(w, r, &sess.Me, err)
		return
	}
	d := checkoutData{URL: to, Host: u.Host, AccountID: r.PathValue("id"), Account: "the account", Plan: "The plan"}
	if a, err := s.api.Account(r.Context(), sess.Token, d.AccountID); err == nil {
		d.Account = a.Name
	}
	if plans, err := s.api.Plans(r.Context()); err == nil {
		for _, pl := range plans {
			if pl.ID == planID {
				d.Plan = pl.Name + ", " + pl.Price()
			}
		}
	}
	s.render(w, r, http.StatusOK, "checkout", &page{Title: "Continue to payment", User: &sess.Me, Data: d})
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

// planProducts are what a plan can sell (billing.md §2), in order.
var planProducts = []string{"platform", "identity", "courier"}

// planIntervals are a plan's intervals, with their words.
var planIntervals = [][2]string{{"once", "once (a one-time sale)"}, {"month", "every month"}, {"year", "every year"}}

type plansData struct {
	Plans []BillingPlan
	// Editing is the plan the form changes; nil on the list, whose form
	// makes a new plan.
	Editing   *BillingPlan
	Products  []string
	Intervals [][2]string
	// Chosen are the products ticked in the form.
	Chosen map[string]bool
}

// planNotices are the confirmations after a plan form, by key, so no
// text from the query string reaches the page.
var planNotices = map[string]string{
	"created": "The plan was created, with its price at the processor. It is on sale at /pricing.",
	"updated": "The plan was saved. A new price applies to new checkouts; existing subscriptions keep theirs.",
}

// operatorPlans lists every plan, inactive ones too, above the form that
// makes a new one.
func (s *server) operatorPlans(w http.ResponseWriter, r *http.Request, sess *session) {
	p := &page{Notice: planNotices[r.URL.Query().Get("done")], Form: map[string]string{"currency": "usd", "interval": "once"}}
	s.renderPlans(w, r, sess, p, http.StatusOK, nil, map[string]bool{})
}

func (s *server) renderPlans(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, editing *BillingPlan, chosen map[string]bool) {
	plans, err := s.api.OperatorPlans(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p.Title, p.User, p.Tab = "Plans", &sess.Me, "plans"
	if editing != nil {
		p.Title = "Edit plan · " + editing.Name
	}
	p.Data = plansData{Plans: plans, Editing: editing, Products: planProducts, Intervals: planIntervals, Chosen: chosen}
	s.render(w, r, status, "operator_plans", p)
}

// operatorPlan is one plan's edit form.
func (s *server) operatorPlan(w http.ResponseWriter, r *http.Request, sess *session) {
	pl, ok := s.findPlan(w, r, sess)
	if !ok {
		return
	}
	form := map[string]string{"name": pl.Name, "amount": strconv.FormatInt(pl.Amount, 10), "currency": pl.Currency,
		"interval": pl.Interval, "trial_days": strconv.Itoa(pl.TrialDays), "version_range": deref(pl.VersionRange), "meter": deref(pl.Meter)}
	if pl.Active {
		form["active"] = "yes"
	}
	chosen := map[string]bool{}
	for _, x := range pl.Products {
		chosen[x] = true
	}
	s.renderPlans(w, r, sess, &page{Form: form}, http.StatusOK, pl, chosen)
}

// findPlan is the plan named by the path among the staff's list; it
// answers the page itself (404, or the failure) when it returns false.
func (s *server) findPlan(w http.ResponseWriter, r *http.Request, sess *session) (*BillingPlan, bool) {
	plans, err := s.api.OperatorPlans(r.Context(), sess.Token)
	if err != nil {
		s.fail(w, r, &sess.Me, err)
		return nil, false
	}
	for i := range plans {
		if plans[i].ID == r.PathValue("pid") {
			return &plans[i], true
		}
	}
	s.notFound(w, r, &sess.Me)
	return nil, false
}

// planForm reads the plan form: what was typed (to show it again) and the
// products ticked.
func planForm(r *http.Request) (map[string]string, map[string]bool) {
	form := map[string]string{}
	for _, k := range []string{"name", "amount", "currency", "interval", "trial_days", "version_range", "meter", "active"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	chosen := map[string]bool{}
	for _, x := range r.PostForm["products"] {
		chosen[x] = true
	}
	return form, chosen
}

// planBody is billing's plan body from the form. Billing validates every
// field; the page only carries what was typed: a figure that reads as a
// JSON number goes as one (billing takes only an integer literal), any
// other text as a string, which billing refuses in the field's words.
func planBody(form map[string]string, r *http.Request, edit bool) map[string]any {
	body := map[string]any{"name": form["name"], "products": append([]string{}, r.PostForm["products"]...),
		"amount": number(form["amount"]), "currency": strings.ToLower(form["currency"]), "interval": form["interval"],
		"meter": form["meter"]}
	switch {
	case form["trial_days"] != "":
		body["trial_days"] = number(form["trial_days"])
	case edit:
		body["trial_days"] = json.RawMessage("0")
	}
	if form["version_range"] != "" {
		body["version_range"] = form["version_range"]
	}
	if edit {
		body["active"] = form["active"] == "yes"
	}
	return body
}

// number is text as a JSON number when it is one, else as a string.
func number(text string) any {
	if text != "" && (text[0] == '-' || text[0] >= '0' && text[0] <= '9') && json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	return text
}

// planFieldWords are billing's plan rules in words.
var planFieldWords = map[string]string{
	"name:required":                  "Enter the plan's name (at most 120 characters).",
	"products:required":              "Tick at least one product the plan sells.",
	"products:duplicate":             "Tick each product once.",
	"products:not_sellable":          "Choose only platform, identity or courier; kit is free and never sold.",
	"amount:required":                "Enter the price in minor units, such as 12000 for 120.00 USD.",
	"amount:integer_minor_units":     "Enter the price as a whole number of minor units (cents for USD): 12000 for 120.00 USD, with no point, comma or symbol.",
	"amount:negative":                "The price cannot be negative.",
	"amount:too_large":               "The price is too large: at most 99,999,999 minor units.",
	"currency:iso4217_lower":         "Enter a three-letter ISO 4217 currency code, such as usd or eur.",
	"currency:currency_mismatch":     "A plan's currency cannot change: make a new plan in the other currency and take this one off sale.",
	"interval:required":              "Choose how often the plan is paid.",
	"interval:one_of":                "Choose once, every month or every year.",
	"trial_days:integer_minor_units": "Enter the trial as a whole number of days.",
	"trial_days:negative":            "The trial cannot be negative.",
	"trial_days:too_large":           "A trial is at most 730 days.",
	"trial_days:once_has_no_trial":   "A one-time plan has no trial: leave it at 0, or choose a monthly or yearly interval.",
	"version_range:invalid":          "Enter a version range such as ^1.0.0 or >=1.2.0 <2.0.0, or leave it empty for every version.",
	"meter:metric_name":              "Enter a metric name in lower case letters, digits and underscores, such as tokens.",
	"meter:once_is_not_metered":      "A one-time plan is not metered: leave the meter empty, or choose a monthly or yearly interval.",
}

// savePlan creates (no plan in the path) or changes a plan through
// billing; a refusal shows the form again with billing's reasons by field.
func (s *server) savePlan(w http.ResponseWriter, r *http.Request, sess *session) {
	var editing *BillingPlan
	if r.PathValue("pid") != "" {
		pl, ok := s.findPlan(w, r, sess)
		if !ok {
			return
		}
		editing = pl
	}
	form, chosen := planForm(r)
	body := planBody(form, r, editing != nil)
	var err error
	done := "created"
	if editing != nil {
		_, err = s.api.UpdatePlan(r.Context(), sess.Token, editing.ID, body)
		done = "updated"
	} else {
		_, err = s.api.CreatePlan(r.Context(), sess.Token, body)
	}
	if err != nil {
		if StatusOf(err) == http.StatusNotFound {
			s.notFound(w, r, &sess.Me)
			return
		}
		p := &page{Form: form}
		status := formFailure(p, err)
		var ae *APIError
		if errors.As(err, &ae) {
			for field, rule := range ae.Fields {
				if words, ok := planFieldWords[field+":"+strings.SplitN(rule, ",", 2)[0]]; ok {
					p.Errors[field] = words
				}
			}
		}
		s.renderPlans(w, r, sess, p, status, editing, chosen)
		return
	}
	http.Redirect(w, r, "/operator/plans?done="+done, http.StatusSeeOther)
}
