package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// fakeBox is an httptest box operator API: one active row per (account,
// product), 409 with the active row otherwise, as box answers.
type fakeBox struct {
	srv     *httptest.Server
	mu      sync.Mutex
	down    bool
	next    int64
	active  map[string]map[string]any // account/product → row
	byID    map[int64]string
	revoked []int64
	tokens  []string
}

func newFakeBox(t testing.TB) *fakeBox {
	b := &fakeBox{active: map[string]map[string]any{}, byID: map[int64]string{}}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBox) setDown(v bool) { b.mu.Lock(); b.down = v; b.mu.Unlock() }

func (b *fakeBox) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	b.tokens = append(b.tokens, r.Header.Get("Authorization"))
	if r.Header.Get("Authorization") != "Bearer "+staffToken {
		writeJSON(w, 403, map[string]any{"error": map[string]any{"code": "forbidden", "message": "platform staff only"}})
		return
	}
	switch {
	case r.URL.Path == "/v1/operator/entitlements":
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		key := in["account_id"].(string) + "/" + in["product"].(string)
		if row, ok := b.active[key]; ok {
			writeJSON(w, 409, map[string]any{"entitlement": row, "duplicate": true})
			return
		}
		b.next++
		row := map[string]any{"id": b.next, "account_id": in["account_id"], "product": in["product"], "status": "active",
			"source": in["source"], "reference": in["reference"]}
		b.active[key], b.byID[b.next] = row, key
		writeJSON(w, 201, map[string]any{"entitlement": row})
	case strings.HasPrefix(r.URL.Path, "/v1/operator/entitlements/") && strings.HasSuffix(r.URL.Path, "/revoke"):
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/operator/entitlements/"), "/revoke"), 10, 64)
		key, ok := b.byID[id]
		if !ok {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"code": "not_found", "message": "not found"}})
			return
		}
		delete(b.active, key)
		b.revoked = append(b.revoked, id)
		writeJSON(w, 200, map[string]any{"entitlement": map[string]any{"id": id, "status": "revoked"}})
	default:
		w.WriteHeader(404)
	}
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
		box := newFakeBox(t)
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
		for key, row := range box.active {
			if row["source"] != "reconciled_payment" || row["reference"] != pid {
				t.Errorf("%s granted as %v", key, row)
			}
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
			r.body["reconciliation"].(map[string]any)["state"] != "revoked" || len(box.revoked) != 3 {
			t.Errorf("revoke = %d %s (box revoked %v)", r.status, r.raw, box.revoked)
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
