package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func (e *env) doKey(method, path, token, key, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

// TestGrantIdempotencyKey: a retried grant replays the first answer and
// writes nothing more; a different body under the same key is refused.
func TestGrantIdempotencyKey(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		body := `{"account_id":"` + account + `","product":"platform","source":"reconciled_payment","reference":"pay_1"}`
		first := e.doKey("POST", "/v1/operator/entitlements", staffToken, "grant-pay_1", body)
		if first.Code != http.StatusCreated {
			t.Fatalf("first grant: %d %s", first.Code, first.Body)
		}
		again := e.doKey("POST", "/v1/operator/entitlements", staffToken, "grant-pay_1", body)
		if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() {
			t.Errorf("replay = %d %s, want the first 201 %s", again.Code, again.Body, first.Body)
		}
		if n := e.count(`SELECT count(*) FROM entitlement_events`); n != 1 {
			t.Errorf("events = %d, want 1", n)
		}
		other := e.doKey("POST", "/v1/operator/entitlements", staffToken, "grant-pay_1", strings.Replace(body, "pay_1", "pay_2", 1))
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(other.Body.Bytes(), &env)
		if other.Code != http.StatusUnprocessableEntity || env.Error.Code != "idempotency_key_reused" {
			t.Errorf("different body: %d %s, want 422 idempotency_key_reused in box's envelope", other.Code, other.Body)
		}
	})
}

// TestArtifactFetchIdempotencyKey: concurrent fetches with one key issue
// one capability, and every 2xx answer carries that same token.
func TestArtifactFetchIdempotencyKey(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "platform", "^1.0.0")
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			tokens = map[string]int{}
			codes  = map[int]int{}
		)
		for i := 0; i < 30; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := e.doKey("POST", "/v1/accounts/"+account+"/artifact_fetches", buyerToken, "fetch-1", `{"artifact":"platform","version_range":"^1.2.0"}`)
				var out struct {
					Capability struct{ Token string } `json:"capability"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &out)
				mu.Lock()
				defer mu.Unlock()
				codes[rec.Code]++
				if rec.Code == http.StatusCreated {
					tokens[out.Capability.Token]++
				}
			}()
		}
		wg.Wait()
		if n := e.count(`SELECT count(*) FROM capabilities`); n != 1 {
			t.Errorf("capabilities = %d, want 1", n)
		}
		if len(tokens) != 1 || codes[201]+codes[409] != 30 {
			t.Errorf("codes %v, tokens %d: want one token, 201s and in-progress 409s only", codes, len(tokens))
		}
	})
}
