package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestPlans(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		valid := `{"name":"Pro","products":["identity","platform"],"amount":1999,"currency":"eur","interval":"month","trial_days":14}`
		for _, tt := range []struct {
			name, token, body string
			status            int
			code, field       string
		}{
			{"no token", "", valid, 401, "unauthenticated", ""},
			{"not staff", ownerToken, valid, 403, "forbidden", ""},
			{"float amount", staffToken, strings.Replace(valid, "1999", "19.99", 1), 422, "validation_failed", "amount"},
			{"exponent amount", staffToken, strings.Replace(valid, "1999", "2e3", 1), 422, "validation_failed", "amount"},
			{"negative amount", staffToken, strings.Replace(valid, "1999", "-1", 1), 422, "validation_failed", "amount"},
			{"string amount", staffToken, strings.Replace(valid, "1999", `"1999"`, 1), 422, "validation_failed", "amount"},
			{"upper-case currency", staffToken, strings.Replace(valid, "eur", "EUR", 1), 422, "validation_failed", "currency"},
			{"kit is free", staffToken, strings.Replace(valid, `"identity"`, `"kit"`, 1), 422, "validation_failed", "products"},
			{"duplicate product", staffToken, strings.Replace(valid, `"identity"`, `"platform"`, 1), 422, "validation_failed", "products"},
			{"bad interval", staffToken, strings.Replace(valid, "month", "week", 1), 422, "validation_failed", "interval"},
			{"unknown field", staffToken, strings.Replace(valid, `"name"`, `"nom"`, 1), 400, "malformed_json", ""},
			{"created", staffToken, valid, 201, "", ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do("POST", "/v1/operator/plans", tt.token, tt.body)
				if r.status != tt.status || (tt.code != "" && r.body["code"] != tt.code) {
					t.Fatalf("status %d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
				}
				if tt.field != "" && !strings.Contains(string(r.raw), `"field":"`+tt.field+`"`) {
					t.Errorf("body %s does not name %s", r.raw, tt.field)
				}
			})
		}
		created := e.do("POST", "/v1/operator/plans", staffToken, strings.Replace(valid, "Pro", "Pro 2", 1))
		plan := created.body["plan"].(map[string]any)
		id, price := plan["id"].(string), plan["processor_price_id"].(string)
		if plan["amount"] != float64(1999) || strings.Join(toStrings(plan["products"]), ",") != "platform,identity" {
			t.Errorf("plan = %v", plan)
		}

		// A currency change is refused; a price change makes a new price.
		if r := e.do("PATCH", "/v1/operator/plans/"+id, staffToken, `{"currency":"usd"}`); r.status != 422 {
			t.Errorf("currency change = %d %s", r.status, r.raw)
		}
		r := e.do("PATCH", "/v1/operator/plans/"+id, staffToken, `{"amount":2999}`)
		if r.status != 200 {
			t.Fatalf("PATCH = %d %s", r.status, r.raw)
		}
		if p := r.body["plan"].(map[string]any); p["processor_price_id"] == price || p["amount"] != float64(2999) {
			t.Errorf("after a price change: %v (old price %s)", p, price)
		}
		if r := e.do("PATCH", "/v1/operator/plans/"+id, staffToken, `{"active":false}`); r.status != 200 {
			t.Fatalf("deactivate = %d %s", r.status, r.raw)
		}
		if r := e.do("PATCH", "/v1/operator/plans/not-a-uuid", staffToken, `{"active":false}`); r.status != 404 {
			t.Errorf("bad id = %d", r.status)
		}

		// The public read lists active plans only, to anyone.
		pub := e.do("GET", "/v1/plans", "", "")
		if pub.status != http.StatusOK {
			t.Fatalf("GET /v1/plans = %d", pub.status)
		}
		names := []string{}
		for _, p := range pub.body["plans"].([]any) {
			names = append(names, p.(map[string]any)["name"].(string))
		}
		if strings.Join(names, ",") != "Pro" {
			t.Errorf("public plans = %v, want [Pro]", names)
		}
		if all := e.do("GET", "/v1/operator/plans", staffToken, ""); len(all.body["plans"].([]any)) != 2 {
			t.Errorf("staff plans = %s", all.raw)
		}
		// plan.created twice, plan.updated twice (the refused change wrote nothing).
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.plan.created'`); n != 2 {
			t.Errorf("plan.created events = %d", n)
		}
		if n := e.count(`SELECT count(*) FROM outbox WHERE type = 'billing.plan.updated'`); n != 2 {
			t.Errorf("plan.updated events = %d", n)
		}
	})
}

func TestSeedIsIdempotent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		plans := e.seed()
		e.seed()
		if len(plans) != 4 || e.count(`SELECT count(*) FROM plans`) != 4 {
			t.Fatalf("plans = %v", plans)
		}
		for name, want := range map[string]int64{"Platform": 12000, "identity": 24000, "courier": 24000, "All three": 42000} {
			if p := plans[name]; p.Amount != want || p.Currency != "usd" || p.Interval != "once" {
				t.Errorf("%s = %+v", name, p)
			}
		}
		if got := strings.Join(plans["All three"].Products, ","); got != "platform,identity,courier" {
			t.Errorf("All three grants %s", got)
		}
	})
}

// TestDatabaseRefusesBadPlans: the schema holds the rules for every
// connection, not only this service's code.
func TestDatabaseRefusesBadPlans(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		p := e.seed()["Platform"]
		for _, q := range []string{
			`UPDATE plans SET currency = 'eur' WHERE id = $1`,
			`UPDATE plans SET amount = -1 WHERE id = $1`,
			`UPDATE plans SET products = 'kit' WHERE id = $1`,
			`UPDATE plans SET interval = 'week' WHERE id = $1`,
		} {
			if _, err := e.db.Exec(t.Context(), q, p.ID); err == nil {
				t.Errorf("%s: accepted", q)
			}
		}
	})
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
