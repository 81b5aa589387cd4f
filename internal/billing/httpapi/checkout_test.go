package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/billing/testproc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestCheckout(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		body := `{"plan_id":"` + plan.ID + `"}`
		for _, tt := range []struct {
			name, token, account, body string
			down                       bool
			status                     int
			code                       string
		}{
			{"no token", "", team, body, false, 401, "unauthenticated"},
			{"not a member", staffToken, team, body, false, 404, "not_found"},
			{"malformed account", ownerToken, "nope", body, false, 404, "not_found"},
			{"plain member", memberToken, team, body, false, 403, "forbidden"},
			{"personal account", ownerToken, personal, body, false, 422, "personal_account"},
			{"unknown plan", ownerToken, team, `{"plan_id":"cccccccc-cccc-4ccc-8ccc-cccccccccccc"}`, false, 422, "validation_failed"},
			{"no plan", ownerToken, team, `{}`, false, 422, "validation_failed"},
			{"identity down", ownerToken, team, body, true, 503, "unavailable"},
			{"owner of a team", ownerToken, team, body, false, 201, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e.identity.setDown(tt.down)
				defer e.identity.setDown(false)
				r := e.do("POST", "/v1/accounts/"+tt.account+"/checkout", tt.token, tt.body)
				if r.status != tt.status || (tt.code != "" && r.body["code"] != tt.code) {
					t.Fatalf("status %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
				}
			})
		}
		if n := e.count(`SELECT count(*) FROM customers WHERE account_id = $1`, team); n != 1 {
			t.Errorf("customers = %d", n)
		}
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.customer.created'`); n != 1 {
			t.Errorf("customer.created = %d", n)
		}

		// The same Idempotency-Key answers the same checkout.
		first := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, body, "Idempotency-Key", "k-1")
		again := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, body, "Idempotency-Key", "k-1")
		if first.status != 201 || again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("first %d, again %d %v", first.status, again.status, again.header)
		}
		a, b := first.body["checkout"].(map[string]any), again.body["checkout"].(map[string]any)
		if a["id"] != b["id"] || a["url"] != b["url"] {
			t.Errorf("replay answered another checkout: %v vs %v", a, b)
		}
	})
}

// TestTestProcessorCheckout buys the Platform plan on the hosted test
// checkout: a declined card records a failure; the paying card posts
// Stripe-shaped signed events to billing's webhook, which opens the inbox
// item with the four facts checked.
func TestTestProcessorCheckout(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+plan.ID+`"}`)
		if r.status != 201 {
			t.Fatalf("checkout = %d %s", r.status, r.raw)
		}
		pageURL := r.body["checkout"].(map[string]any)["url"].(string)
		page, err := e.client.Get(pageURL)
		if err != nil {
			t.Fatal(err)
		}
		html, _ := io.ReadAll(page.Body)
		page.Body.Close()
		if page.StatusCode != 200 || !strings.Contains(string(html), "120.00 USD") {
			t.Fatalf("page = %d %s", page.StatusCode, html)
		}
		pay := func(card string) *http.Response {
			resp, err := e.client.PostForm(pageURL, url.Values{"email": {"buyer@example.com"}, "card": {card}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		for _, tt := range []struct {
			card   string
			status int
		}{
			{"1234 5678", 422},
			{"4000 0000 0000 0002", 402},
			{"4000 0000 0000 9995", 402},
		} {
			if resp := pay(tt.card); resp.StatusCode != tt.status {
				t.Errorf("card %s answered %d, want %d", tt.card, resp.StatusCode, tt.status)
			}
		}
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.payment.failed'`); n != 2 {
			t.Errorf("payment.failed = %d, want 2", n)
		}
		resp := pay(testproc.CardPays)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "http://web.example/app/accounts/"+team+"/billing") {
			t.Fatalf("pay = %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if n := e.count(`SELECT count(*) FROM payments WHERE status = 'succeeded' AND amount = 12000 AND account_id = $1`, team); n != 1 {
			t.Errorf("succeeded payments = %d", n)
		}
		if n := e.count(`SELECT count(*) FROM reconciliations WHERE state = 'awaiting_grant'`); n != 1 {
			t.Errorf("awaiting_grant items = %d", n)
		}
		// Paying again is no second payment.
		pay(testproc.CardPays)
		if n := e.count(`SELECT count(*) FROM payments WHERE status = 'succeeded'`); n != 1 {
			t.Errorf("succeeded payments after a second submit = %d", n)
		}
	})
}

// TestTestProcessorRefund: an operator's refund in test mode posts
// charge.refunded, signed, to billing's own webhook route: part of a
// payment leaves it partially_refunded and its awaiting item
// needs_attention; the rest refunds it in full; a further refund, a bad
// amount, a refund by a non-staff caller are refused. A subscription's
// invoice payment is found by the PaymentIntent its invoice named.
func TestTestProcessorRefund(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plan := e.seed()["Platform"]
		buy := func(planID string) {
			r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+planID+`"}`)
			if r.status != 201 {
				t.Fatalf("checkout = %d %s", r.status, r.raw)
			}
			resp, err := e.client.PostForm(r.body["checkout"].(map[string]any)["url"].(string), url.Values{"email": {"buyer@example.com"}, "card": {testproc.CardPays}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("pay = %d", resp.StatusCode)
			}
		}
		buy(plan.ID)
		var paymentID string
		if err := e.db.QueryRow(context.Background(), `SELECT id FROM payments WHERE kind = 'checkout'`).Scan(&paymentID); err != nil {
			t.Fatal(err)
		}
		path := "/v1/operator/payments/" + paymentID + "/refund"
		for _, tt := range []struct {
			name, token, body string
			status            int
		}{
			{"not staff", ownerToken, `{}`, 403},
			{"fraction", staffToken, `{"amount":10.5}`, 422},
			{"zero", staffToken, `{"amount":0}`, 422},
			{"more than paid", staffToken, `{"amount":12001}`, 422},
			{"unknown payment", staffToken, `{}`, 404},
			{"part", staffToken, `{"amount":2000}`, 202},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := path
				if tt.name == "unknown payment" {
					p = "/v1/operator/payments/" + personal + "/refund"
				}
				if r := e.do("POST", p, tt.token, tt.body); r.status != tt.status {
					t.Fatalf("status %d %s, want %d", r.status, r.raw, tt.status)
				}
			})
		}
		if n := e.count(`SELECT count(*) FROM payments WHERE id = $1 AND status = 'partially_refunded' AND amount_refunded = 2000`, paymentID); n != 1 {
			t.Errorf("payment after a partial refund: %d rows", n)
		}
		if n := e.count(`SELECT count(*) FROM reconciliations WHERE payment_id = $1 AND state = 'needs_attention'`, paymentID); n != 1 {
			t.Errorf("the item is not needs_attention after the refund")
		}
		if r := e.do("POST", path, staffToken, `{}`); r.status != 202 || r.body["refund"].(map[string]any)["amount"] != float64(10000) {
			t.Fatalf("refund the rest = %d %s", r.status, r.raw)
		}
		if n := e.count(`SELECT count(*) FROM payments WHERE id = $1 AND status = 'refunded' AND amount_refunded = 12000`, paymentID); n != 1 {
			t.Errorf("payment after the full refund: %d rows", n)
		}
		if r := e.do("POST", path, staffToken, `{}`); r.status != 409 {
			t.Errorf("a third refund = %d %s, want 409", r.status, r.raw)
		}
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.payment.refunded'`); n != 2 {
			t.Errorf("payment.refunded rows = %d, want 2", n)
		}

		// A subscription's invoice payment: its charge names the
		// PaymentIntent, which the invoice's payments recorded.
		r := e.do("POST", "/v1/operator/plans", staffToken, `{"name":"Monthly","products":["platform"],"amount":1500,"currency":"usd","interval":"month"}`)
		if r.status != 201 {
			t.Fatalf("plan = %d %s", r.status, r.raw)
		}
		buy(r.body["plan"].(map[string]any)["id"].(string))
		var invoicePayment string
		if err := e.db.QueryRow(context.Background(), `SELECT id FROM payments WHERE kind = 'invoice' AND payment_intent_id IS NOT NULL`).Scan(&invoicePayment); err != nil {
			t.Fatal(err)
		}
		if r := e.do("POST", "/v1/operator/payments/"+invoicePayment+"/refund", staffToken, `{}`); r.status != 202 {
			t.Fatalf("refund the invoice payment = %d %s", r.status, r.raw)
		}
		if n := e.count(`SELECT count(*) FROM payments WHERE id = $1 AND status = 'refunded'`, invoicePayment); n != 1 {
			t.Errorf("the invoice payment was not matched by its PaymentIntent")
		}
		if n := e.count(`SELECT count(*) FROM processor_events WHERE type = 'charge.refunded' AND outcome = 'needs_attention'`); n != 0 {
			t.Errorf("%d refunds matched no payment", n)
		}
	})
}
