package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	boxhttp "github.com/platformco/platform/internal/box/httpapi"
	boxsql "github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// realBox is box itself in-process (its httpapi over its sqlstore on the
// test's engine, asking the same fake identity), behind a switch that
// plays it down (502, as a gateway would) and a recorder of the
// Authorization headers billing sent it.
type realBox struct {
	srv    *httptest.Server
	db     *sqldb.DB
	mu     sync.Mutex
	down   bool
	tokens []string
}

func newRealBox(t testing.TB, engine sqldb.Engine, identityURL string) *realBox {
	b := &realBox{db: sqltest.Open(t, engine, boxsql.Migrations)}
	ident := boxhttp.NewIdentity(identityURL, 5*time.Second, slog.New(slog.DiscardHandler))
	t.Cleanup(ident.Close)
	h := boxhttp.NewServer(boxhttp.Deps{Service: box.NewService(boxsql.New(b.db), ident, time.Minute), Logger: slog.New(slog.DiscardHandler)})
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		down := b.down
		if !down {
			b.tokens = append(b.tokens, r.Header.Get("Authorization"))
		}
		b.mu.Unlock()
		if down {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *realBox) setDown(v bool) { b.mu.Lock(); b.down = v; b.mu.Unlock() }

// rows lists box's entitlements of status as "product source reference".
func (b *realBox) rows(t testing.TB, status string) []string {
	t.Helper()
	rows, err := b.db.Query(context.Background(), `SELECT product, coalesce(source, ''), coalesce(reference, '') FROM entitlements
		WHERE status = $1 ORDER BY id`, status)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p, s, r string
		if err := rows.Scan(&p, &s, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, p+" "+s+" "+r)
	}
	return out
}

// buy checks out plan for the team as its owner and posts the paid
// session's webhook; it returns the processor's payment id.
func (e *env) buy(planID string, amount int64, n int) string {
	e.t.Helper()
	r := e.do("POST", "/v1/accounts/"+team+"/checkout", ownerToken, `{"plan_id":"`+planID+`"}`, "Idempotency-Key", "buy-"+strconv.Itoa(n))
	if r.status != 201 {
		e.t.Fatalf("checkout = %d %s", r.status, r.raw)
	}
	var session string
	if err := e.db.QueryRow(context.Background(), `SELECT processor_checkout_id FROM checkouts WHERE id = $1`,
		r.body["checkout"].(map[string]any)["id"]).Scan(&session); err != nil {
		e.t.Fatal(err)
	}
	plan, _ := e.store.Plan(context.Background(), planID)
	pid := "pi_buy_" + strconv.Itoa(n)
	if w := e.webhook(checkoutCompleted("evt_buy_"+strconv.Itoa(n), session, pid, team, plan, amount)); w.status != 200 {
		e.t.Fatalf("webhook = %d %s", w.status, w.raw)
	}
	return pid
}

func (e *env) inbox(state string) []map[string]any {
	e.t.Helper()
	r := e.do("GET", "/v1/operator/reconciliations?state="+state, staffToken, "")
	if r.status != 200 {
		e.t.Fatalf("inbox = %d %s", r.status, r.raw)
	}
	var out []map[string]any
	for _, it := range r.body["reconciliations"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func TestInboxGrantAndRevoke(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		box := newRealBox(t, engine, e.identity.srv.URL)
		e.withBox(box.srv.URL)
		plans := e.seed()
		all := plans["All three"]
		pid := e.buy(all.ID, all.Amount, 1)

		items := e.inbox("awaiting_grant")
		if len(items) != 1 {
			t.Fatalf("awaiting_grant = %v", items)
		}
		it := items[0]
		f := it["facts"].(map[string]any)
		if f["amount_matches"] != true || f["one_time"] != true || f["settled"] != true || f["team_account"] != true ||
			f["buyer_role"] != "owner" || f["buyer_email"] != "owner@example.com" || f["payment_email"] != "buyer@example.com" {
			t.Errorf("facts = %v", f)
		}
		id := it["id"].(string)

		for _, tt := range []struct {
			name, token string
			status      int
		}{
			{"not staff", ownerToken, 403},
			{"no token", "", 401},
		} {
			if r := e.do("POST", "/v1/operator/reconciliations/"+id+"/grant", tt.token, ""); r.status != tt.status {
				t.Errorf("%s: grant = %d", tt.name, r.status)
			}
		}
		box.setDown(true)
		if r := e.do("POST", "/v1/operator/reconciliations/"+id+"/grant", staffToken, ""); r.status != 503 {
			t.Errorf("box down: grant = %d %s", r.status, r.raw)
		}
		box.setDown(false)
		if len(e.inbox("awaiting_grant")) != 1 {
			t.Fatal("box down moved the item")
		}
		r := e.do("POST", "/v1/operator/reconciliations/"+id+"/grant", staffToken, "")
		if r.status != 200 {
			t.Fatalf("grant = %d %s", r.status, r.raw)
		}
		rec := r.body["reconciliation"].(map[string]any)
		if rec["state"] != "granted" || len(rec["entitlement_ids"].([]any)) != 3 {
			t.Errorf("granted item = %v", rec)
		}
		if got, want := strings.Join(box.rows(t, "active"), ","), "platform reconciled_payment "+pid+",identity reconciled_payment "+pid+
			",courier reconciled_payment "+pid; got != want {
			t.Errorf("box's active rows = %s, want %s", got, want)
		}
		for _, tok := range box.tokens {
			if tok != "Bearer "+staffToken {
				t.Errorf("box saw %q, not the caller's token", tok)
			}
		}
		if r := e.do("POST", "/v1/operator/reconciliations/"+id+"/grant", staffToken, ""); r.status != 409 {
			t.Errorf("second grant = %d", r.status)
		}

		// A dispute of a granted payment asks for the revoke first.
		if w := e.webhook(stripeEvent("evt_dp", "charge.dispute.created", time.Now().Unix(), map[string]any{"id": "dp_1",
			"object": "dispute", "payment_intent": pid, "amount": all.Amount, "currency": "usd"})); w.status != 200 {
			t.Fatalf("dispute = %d", w.status)
		}
		att := e.inbox("needs_attention")
		if len(att) != 1 || att[0]["reason"] != "revoke_disputed" {
			t.Fatalf("needs_attention = %v", att)
		}
		if r := e.do("POST", "/v1/operator/reconciliations/"+id+"/revoke", staffToken, ""); r.status != 200 ||
			r.body["reconciliation"].(map[string]any)["state"] != "revoked" || len(box.rows(t, "revoked")) != 3 {
			t.Errorf("revoke = %d %s (box revoked %v)", r.status, r.raw, box.rows(t, "revoked"))
		}

		// Renewal: a second payment while a row is active is box's 409.
		platform := plans["Platform"]
		e.buy(platform.ID, platform.Amount, 2)
		first := e.inbox("awaiting_grant")[0]["id"].(string)
		if r := e.do("POST", "/v1/operator/reconciliations/"+first+"/grant", staffToken, ""); r.status != 200 {
			t.Fatalf("grant = %d %s", r.status, r.raw)
		}
		e.buy(platform.ID, platform.Amount, 3)
		second := e.inbox("awaiting_grant")[0]["id"].(string)
		r = e.do("POST", "/v1/operator/reconciliations/"+second+"/grant", staffToken, "")
		if r.status != 409 || !strings.Contains(r.body["detail"].(string), "revoke it and grant again") {
			t.Errorf("renewal grant = %d %s", r.status, r.raw)
		}
		if att := e.inbox("needs_attention"); len(att) != 1 || att[0]["reason"] != "already_entitled" {
			t.Errorf("needs_attention after renewal = %v", att)
		}
	})
}

func TestMoneyStateReads(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		e.withBox("")
		plan := e.seed()["Platform"]
		e.buy(plan.ID, plan.Amount, 1)
		for _, tt := range []struct {
			name, token, account, query string
			status                      int
		}{
			{"member", memberToken, team, "", 200},
			{"owner", ownerToken, team, "", 200},
			{"stranger", staffToken, team, "", 404},
			{"no token", "", team, "", 401},
			{"bad cursor", ownerToken, team, "?payments_cursor=x", 422},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do("GET", "/v1/accounts/"+tt.account+"/billing"+tt.query, tt.token, "")
				if r.status != tt.status {
					t.Fatalf("= %d %s", r.status, r.raw)
				}
				if tt.status == 200 && (len(r.body["payments"].([]any)) != 1 || r.body["customer"] == nil) {
					t.Errorf("body = %s", r.raw)
				}
			})
		}
		for _, tt := range []struct {
			query  string
			status int
			n      int
		}{
			{"", 200, 1}, {"?status=succeeded", 200, 1}, {"?status=failed", 200, 0}, {"?status=nope", 422, 0}, {"?limit=0", 422, 0},
		} {
			r := e.do("GET", "/v1/operator/payments"+tt.query, staffToken, "")
			if r.status != tt.status || (tt.status == 200 && len(r.body["payments"].([]any)) != tt.n) {
				t.Errorf("payments%s = %d %s", tt.query, r.status, r.raw)
			}
		}
		// Box unset: a grant fails closed and the item stays.
		id := e.inbox("awaiting_grant")[0]["id"].(string)
		if r := e.do("POST", "/v1/operator/reconciliations/"+id+"/grant", staffToken, ""); r.status != 503 {
			t.Errorf("grant without box = %d", r.status)
		}
	})
}
