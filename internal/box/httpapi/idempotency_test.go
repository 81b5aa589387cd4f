package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// doKeyed is doKey with the Authorization header as given ("" for none).
func (e *env) doKeyed(path, authorization, key string, body io.Reader) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest("POST", path, body)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

// as answers identity's questions for token as the fixed directory would
// for asToken (another session of that user, or a user given that role).
func (e *env) as(token, asToken string) {
	e.identity.setOverride(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+token {
			r.Header.Set("Authorization", "Bearer "+asToken)
		}
		e.identity.directory(w, r)
	})
}

// TestReplayOnlyToTheAuthorizedCaller: the staff and member checks run
// before the Idempotency-Key layer on every request, so a stored answer
// replays to the user who made the request while they may still make it,
// and to no one else.
func TestReplayOnlyToTheAuthorizedCaller(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		grants := "/v1/operator/entitlements"
		body := `{"account_id":"` + account + `","product":"platform"}`
		if w := e.doKey("POST", grants, staffToken, "k-grant", body); w.Code != http.StatusCreated {
			t.Fatalf("grant: %d %s", w.Code, w.Body)
		}
		// Another session of the same staff user replays.
		e.as("tok-staff-second-session", staffToken)
		if w := e.doKey("POST", grants, "tok-staff-second-session", "k-grant", body); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("same user, another session: %d replayed %q, want the 201 replayed", w.Code, w.Header().Get("Idempotent-Replayed"))
		}
		e.identity.setOverride(nil)

		fetches := "/v1/accounts/" + account + "/artifact_fetches"
		fetch := `{"artifact":"platform"}`
		first := e.doKey("POST", fetches, buyerToken, "k-fetch", fetch)
		if first.Code != http.StatusCreated {
			t.Fatalf("fetch: %d %s", first.Code, first.Body)
		}
		// Another member with the same key and body gets a capability of
		// their own, not the buyer's.
		e.as(strangerTok, buyerToken)
		e.identity.setOverride(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer "+strangerTok && r.URL.Path == "/v1/me" {
				writeJSON(w, 200, map[string]any{"id": strangerID, "email": "s@example.com", "display_name": "", "staff": false})
				return
			}
			if r.Header.Get("Authorization") == "Bearer "+strangerTok {
				r.Header.Set("Authorization", "Bearer "+buyerToken)
			}
			e.identity.directory(w, r)
		})
		other := e.doKey("POST", fetches, strangerTok, "k-fetch", fetch)
		if other.Code != http.StatusCreated || other.Header().Get("Idempotent-Replayed") != "" || other.Body.String() == first.Body.String() {
			t.Errorf("another member, same key: %d replayed %q, want a capability of their own", other.Code, other.Header().Get("Idempotent-Replayed"))
		}

		tests := []struct {
			name     string
			identity http.HandlerFunc
			path     string
			token    string
			key      string
			body     string
			want     int
		}{
			{"ErrLoggedOutNoReplay", func(w http.ResponseWriter, r *http.Request) { problem(w, 401) }, grants, staffToken, "k-grant", body, 401},
			{"ErrNoLongerStaffNoReplay", func(w http.ResponseWriter, r *http.Request) { problem(w, 403) }, grants, staffToken, "k-grant", body, 403},
			{"ErrNoLongerMemberNoReplay", func(w http.ResponseWriter, r *http.Request) { problem(w, 404) }, fetches, buyerToken, "k-fetch", fetch, 404},
			{"ErrLoggedOutMemberNoReplay", func(w http.ResponseWriter, r *http.Request) { problem(w, 401) }, fetches, buyerToken, "k-fetch", fetch, 401},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e.identity.setOverride(tt.identity)
				defer e.identity.setOverride(nil)
				w := e.doKey("POST", tt.path, tt.token, tt.key, tt.body)
				if w.Code != tt.want || w.Header().Get("Idempotent-Replayed") != "" || strings.Contains(w.Body.String(), "boxcap_") {
					t.Errorf("got %d replayed %q %s, want %d and no replay", w.Code, w.Header().Get("Idempotent-Replayed"), w.Body, tt.want)
				}
			})
		}
		if n := e.count(`SELECT count(*) FROM capabilities`); n != 2 {
			t.Errorf("capabilities = %d, want 2 (the buyer's and the other member's)", n)
		}
	})
}

// countingReader counts the bytes a handler reads from a request body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestUnauthenticatedCallersWriteAndReadNothing: 40 requests with junk
// bearers and fresh keys on every keyed route leave no idempotency row,
// and none reads a byte of its body.
func TestUnauthenticatedCallersWriteAndReadNothing(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{bare: true})
		acct := "/v1/accounts/" + account
		routes := []string{"/v1/operator/entitlements", "/v1/operator/releases", acct + "/artifact_fetches", acct + "/approvals", acct + "/claims"}
		for i := range 40 {
			path := routes[i%len(routes)]
			auth := []string{"Bearer junk-" + strconv.Itoa(i), "", "Basic eDp5", "Bearer "}[i%4]
			body := &countingReader{r: strings.NewReader(`{"account_id":"` + account + `","product":"platform"}` + strings.Repeat(" ", 64<<10))}
			w := e.doKeyed(path, auth, "fresh-"+strconv.Itoa(i), body)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s with %q: %d, want 401", path, auth, w.Code)
			}
			if n := body.n.Load(); n != 0 {
				t.Errorf("%s with %q: read %d body bytes before authenticating, want 0", path, auth, n)
			}
		}
		if n := e.count(`SELECT count(*) FROM idempotency_keys`); n != 0 {
			t.Errorf("idempotency rows = %d, want 0", n)
		}
		if n := e.written(); n != 0 {
			t.Errorf("rows written = %d, want 0", n)
		}
	})
}
