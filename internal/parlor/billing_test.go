package parlor_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeBilling is the gateway as billing's pages see it: identity's /v1/me
// and account read, and billing's routes, answering from memory. It
// records the inbox actions it was asked for, with the token.
type fakeBilling struct {
	mu      sync.Mutex
	actions []string
	down    bool
}

const (
	billingOwner  = "tok-owner"
	billingMember = "tok-member"
	billingStaff  = "tok-staff"
	billingTeam   = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	billingItem   = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
)

func (f *fakeBilling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	write := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	plans := map[string]any{"plans": []any{
		map[string]any{"id": "11111111-1111-4111-8111-111111111111", "name": "Platform", "products": []string{"platform"}, "amount": 12000,
			"currency": "usd", "interval": "once", "trial_days": 0, "version_range": nil, "meter": nil, "active": true},
		map[string]any{"id": "22222222-2222-4222-8222-222222222222", "name": "Tokens", "products": []string{"platform"}, "amount": 2,
			"currency": "usd", "interval": "month", "trial_days": 0, "version_range": "^2", "meter": "tokens", "active": true},
	}}
	switch {
	case r.URL.Path == "/v1/plans":
		if down {
			write(503, map[string]any{"code": "unavailable"})
			return
		}
		write(200, plans)
	case r.URL.Path == "/v1/me":
		switch token {
		case billingOwner, billingMember, billingStaff:
			write(200, map[string]any{"id": "u-" + token, "email": token + "@example.com", "staff": token == billingStaff, "email_verified": true})
		default:
			write(401, map[string]any{"code": "unauthenticated"})
		}
	case r.URL.Path == "/v1/accounts/"+billingTeam:
		role := map[string]string{billingOwner: "owner", billingMember: "member"}[token]
		if role == "" {
			write(404, map[string]any{"code": "not_found"})
			return
		}
		write(200, map[string]any{"id": billingTeam, "name": "Engines", "slug": "engines", "personal": false, "role": role})
	case r.URL.Path == "/v1/accounts/"+billingTeam+"/billing":
		write(200, map[string]any{"customer": nil, "subscriptions": []any{}, "payments": []any{map[string]any{"id": "p1", "kind": "checkout",
			"amount": 12000, "amount_refunded": 0, "currency": "usd", "status": "succeeded", "email": "b@example.com",
			"processor_payment_id": "pi_42", "created_at": "2026-12-01T10:00:00Z"}},
			"invoices": []any{map[string]any{"id": "i1", "processor_invoice_id": "in_1", "amount_due": 1999, "currency": "eur", "status": "paid",
				"hosted_invoice_url": "https://invoice.example/in_1", "invoice_pdf": nil, "created_at": "2026-12-01T10:00:00Z"}}})
	case r.URL.Path == "/v1/accounts/"+billingTeam+"/checkout" && r.Method == "POST":
		if token != billingOwner {
			write(403, map[string]any{"code": "forbidden", "detail": "only the account's owner or an admin can buy for it"})
			return
		}
		write(201, map[string]any{"checkout": map[string]any{"id": "x", "url": "https://checkout.example/cs_1", "expires_at": "2026-12-08T10:00:00Z"}})
	case r.URL.Path == "/v1/operator/plans":
		write(200, plans)
	case r.URL.Path == "/v1/operator/reconciliations":
		items := []any{}
		if r.URL.Query().Get("state") == "awaiting_grant" {
			items = append(items, map[string]any{"id": billingItem, "state": "awaiting_grant", "reason": nil, "account_id": billingTeam,
				"facts": map[string]any{"amount_matches": true, "one_time": true, "products": []string{"platform"}, "settled": true,
					"team_account": true, "buyer_role": "owner", "buyer_email": "owner@example.com", "payment_email": "payer@example.com"},
				"entitlement_ids": []any{}, "plan": plans["plans"].([]any)[0],
				"payment": map[string]any{"id": "p1", "kind": "checkout", "amount": 12000, "currency": "usd", "status": "succeeded",
					"processor_payment_id": "pi_42", "created_at": "2026-12-01T10:00:00Z"}, "created_at": "2026-12-01T10:00:00Z"})
		}
		write(200, map[string]any{"reconciliations": items, "next_cursor": nil})
	case strings.HasPrefix(r.URL.Path, "/v1/operator/reconciliations/") && r.Method == "POST":
		f.mu.Lock()
		f.actions = append(f.actions, token+" "+strings.TrimPrefix(r.URL.Path, "/v1/operator/reconciliations/"))
		f.mu.Unlock()
		if down {
			write(503, map[string]any{"code": "unavailable", "detail": "box unavailable"})
			return
		}
		write(200, map[string]any{"reconciliation": map[string]any{"id": billingItem, "state": "granted"}})
	default:
		write(404, map[string]any{"code": "not_found"})
	}
}

func TestBillingPages(t *testing.T) {
	fake := &fakeBilling{}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	base := startParlor(t, api.URL)
	as := func(token string) *visitor {
		v := newVisitor(t, base)
		v.cookie = token
		return v
	}
	for _, tt := range []struct {
		name, token, path string
		status            int
		texts             []string
	}{
		{"pricing, signed out", "", "/pricing", 200, []string{"Pricing", "Platform", "120.00 USD once", "0.02 USD a month per tokens", "^2", "Create an account"}},
		{"pricing, signed in", billingOwner, "/pricing", 200, []string{"Choose the account to buy for"}},
		{"billing, owner", billingOwner, "/app/accounts/" + billingTeam + "/billing", 200, []string{"Billing", "Buy", "120.00 USD", "pi_42", "19.99 EUR", "View"}},
		{"billing, member cannot buy", billingMember, "/app/accounts/" + billingTeam + "/billing", 200, []string{"Only the account's owner or an admin can buy for it"}},
		{"billing, back from checkout", billingOwner, "/app/accounts/" + billingTeam + "/billing?checkout=success", 200, []string{"the payment is being recorded"}},
		{"billing, signed out", "", "/app/accounts/" + billingTeam + "/billing", 303, nil},
		{"inbox", billingStaff, "/operator/payments", 200, []string{"Payments", "Platform · 120.00 USD", "✓ Amount equals the plan's price, one-time", "✓ Settled", "owner@example.com", "payer@example.com", "Grant"}},
		{"inbox, needs attention", billingStaff, "/operator/payments?state=needs_attention", 200, []string{"Nothing needs_attention."}},
		{"inbox, not staff", billingOwner, "/operator/payments", 404, nil},
		{"plans", billingStaff, "/operator/plans", 200, []string{"Plans", "Tokens", "yes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := as(tt.token).get(tt.path)
			if tt.status == 303 {
				if a.Status != 303 || !strings.HasPrefix(a.location(), "/signin") {
					t.Fatalf("status %d to %q, want 303 to sign in", a.Status, a.location())
				}
				return
			}
			a.expect(t, tt.status, tt.texts...)
		})
	}

	// Buy links the owner to the processor's page (a link: the page's
	// form-action would hold a redirect to it); a member is refused.
	a := as(billingOwner).post("/app/accounts/"+billingTeam+"/billing/checkout", url.Values{"plan_id": {"11111111-1111-4111-8111-111111111111"}})
	a.expect(t, http.StatusOK, "Continue to payment", "Platform, 120.00 USD once for Engines", "checkout.example", "Continue to the payment page")
	if !strings.Contains(a.Body, `href="https://checkout.example/cs_1"`) {
		t.Error("the page does not link to the checkout")
	}
	as(billingMember).post("/app/accounts/"+billingTeam+"/billing/checkout", url.Values{"plan_id": {"x"}}).
		expect(t, http.StatusForbidden, "owner or an admin")

	// Grant goes to billing with the staff member's own token.
	a = as(billingStaff).post("/operator/payments/"+billingItem+"/grant", url.Values{})
	if a.Status != http.StatusSeeOther || !strings.Contains(a.location(), "done=granted") {
		t.Errorf("grant = %d to %q", a.Status, a.location())
	}
	fake.mu.Lock()
	fake.down = true
	fake.mu.Unlock()
	as(billingStaff).post("/operator/payments/"+billingItem+"/revoke", url.Values{}).expect(t, http.StatusServiceUnavailable)
	as("").get("/pricing").expect(t, http.StatusServiceUnavailable)
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if got := strings.Join(fake.actions, ","); got != billingStaff+" "+billingItem+"/grant,"+billingStaff+" "+billingItem+"/revoke" {
		t.Errorf("inbox actions = %s", got)
	}
}
