package idempotency_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// handler counts how often the work runs and answers 201 with a secret.
func handler(runs *atomic.Int64, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		time.Sleep(delay)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/things/1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"run":`+string(rune('0'+n))+`,"secret":"s3cr3t-token","echo":`+string(body)+`}`)
	})
}

func fail(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.WriteHeader(status)
	io.WriteString(w, code)
}

func send(h http.Handler, key, caller, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/things", strings.NewReader(body))
	if key != "" {
		r.Header.Set(idempotency.Header, key)
	}
	r.Header.Set("X-Caller", caller)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func scope(r *http.Request) string { return r.Header.Get("X-Caller") }

var secret = bytes.Repeat([]byte{7}, idempotency.SecretSize)

// TestPublicRecordIsFoundByKeyAndBody: on a route without a caller, a
// stranger who uses the key another person will use makes a record of
// their own; that person's request still runs, and each replays its own.
func TestPublicRecordIsFoundByKeyAndBody(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		var runs atomic.Int64
		h := idempotency.New(db, secret).WrapPublic(fail, handler(&runs, 0))

		squatter := send(h, "signup-alice@example.com", "", `{"email":"alice@example.com","password":"guess"}`)
		if squatter.Code != 201 {
			t.Fatalf("squatter: %d", squatter.Code)
		}
		alice := send(h, "signup-alice@example.com", "", `{"email":"alice@example.com","password":"real"}`)
		if alice.Code != 201 || alice.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("alice = %d replayed %q, want 201 not replayed", alice.Code, alice.Header().Get("Idempotent-Replayed"))
		}
		retry := send(h, "signup-alice@example.com", "", `{"email":"alice@example.com","password":"real"}`)
		if retry.Code != 201 || retry.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry.Body.Bytes(), alice.Body.Bytes()) {
			t.Errorf("alice's retry = %d %q, want her own response replayed", retry.Code, retry.Body)
		}
		if got := runs.Load(); got != 2 {
			t.Errorf("work ran %d times, want 2", got)
		}
	})
}

// TestReplayNeedsTheServiceSecret: a replay is sealed under the service
// secret and the key, so a store with another secret (or an attacker with
// only the database and the key) cannot open it.
func TestReplayNeedsTheServiceSecret(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		var runs atomic.Int64
		if w := send(idempotency.New(db, secret).Wrap(scope, fail, handler(&runs, 0)), "1", "alice", `{}`); w.Code != 201 {
			t.Fatalf("first: %d", w.Code)
		}
		other := idempotency.New(db, bytes.Repeat([]byte{8}, idempotency.SecretSize)).Wrap(scope, fail, handler(&runs, 0))
		w := send(other, "1", "alice", `{}`)
		if w.Header().Get("Idempotent-Replayed") != "" || strings.Contains(w.Body.String(), `"run":1`) {
			t.Errorf("a store with another secret replayed the first response: %d %q", w.Code, w.Body)
		}
	})
}

func TestReplayConflictAndScope(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		var runs atomic.Int64
		h := idempotency.New(db, secret).Wrap(scope, fail, handler(&runs, 0))

		first := send(h, "key-1", "alice", `{"a":1}`)
		if first.Code != 201 {
			t.Fatalf("first: %d", first.Code)
		}
		replay := send(h, "key-1", "alice", `{"a":1}`)
		if replay.Code != 201 || !bytes.Equal(replay.Body.Bytes(), first.Body.Bytes()) ||
			replay.Header().Get("Location") != "/things/1" || replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %d %q %v, want the first response", replay.Code, replay.Body, replay.Header())
		}
		if got := runs.Load(); got != 1 {
			t.Errorf("work ran %d times, want 1", got)
		}
		if w := send(h, "key-1", "alice", `{"a":2}`); w.Code != 422 || w.Body.String() != idempotency.CodeReused {
			t.Errorf("different body: %d %q, want 422 %s", w.Code, w.Body, idempotency.CodeReused)
		}
		// Keys are scoped to the caller: bob's key-1 is a different request.
		if w := send(h, "key-1", "bob", `{"a":2}`); w.Code != 201 {
			t.Errorf("other caller: %d", w.Code)
		}
		if w := send(h, "", "alice", `{"a":1}`); w.Code != 201 {
			t.Errorf("no key: %d", w.Code)
		}
		if got := runs.Load(); got != 3 {
			t.Errorf("work ran %d times, want 3", got)
		}
		if w := send(h, strings.Repeat("k", 256), "alice", `{}`); w.Code != 400 {
			t.Errorf("overlong key: %d, want 400", w.Code)
		}
		// Neither the key nor the response (with its secret) is stored in the clear.
		// Nor is a plain hash of the key or of the request (a sign-up
		// body holds a password) that a guess could be checked against.
		plain := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
		rows, err := db.Query(t.Context(), `SELECT key_digest, fingerprint, body FROM idempotency_keys`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var digest, fingerprint string
			var body []byte
			if err := rows.Scan(&digest, &fingerprint, &body); err != nil {
				t.Fatal(err)
			}
			if digest == "key-1" || digest == plain("idempotency-key-digest\x00key-1") || bytes.Contains(body, []byte("s3cr3t-token")) {
				t.Errorf("idempotency record holds the key or the body in the clear")
			}
			for _, b := range []string{`{"a":1}`, `{"a":2}`} {
				if fingerprint == plain("POST /things\n"+b) {
					t.Errorf("idempotency record holds a plain hash of the request %s", b)
				}
			}
		}
	})
}

// TestConcurrentRequestsDoTheWorkOnce races 100 requests with one key.
func TestConcurrentRequestsDoTheWorkOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		var runs atomic.Int64
		h := idempotency.New(db, secret).Wrap(scope, fail, handler(&runs, 50*time.Millisecond))
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			counts = map[int]int{}
		)
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := send(h, "same-key", "alice", `{"a":1}`)
				mu.Lock()
				counts[w.Code]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if got := runs.Load(); got != 1 {
			t.Errorf("work ran %d times, want 1", got)
		}
		if counts[201] < 1 || counts[201]+counts[409] != 100 {
			t.Errorf("answers %v: want 201s (first and replays) and 409s (in progress) only", counts)
		}
	})
}

// TestServerErrorReleasesTheKey: a 5xx is not replayed; a retry redoes the work.
func TestServerErrorReleasesTheKey(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		var calls atomic.Int64
		h := idempotency.New(db, secret).Wrap(scope, fail, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.WriteHeader(503)
				return
			}
			w.WriteHeader(201)
		}))
		if w := send(h, "k", "alice", `{}`); w.Code != 503 {
			t.Fatalf("first: %d", w.Code)
		}
		if w := send(h, "k", "alice", `{}`); w.Code != 201 {
			t.Errorf("retry after 503: %d, want 201", w.Code)
		}
		if got := calls.Load(); got != 2 {
			t.Errorf("calls = %d, want 2", got)
		}
	})
}
