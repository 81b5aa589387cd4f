package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// Fixed callers of the fake identity.
const (
	staffToken  = "tok-staff-5b1e0c"
	staffID     = "11111111-1111-4111-8111-111111111111"
	buyerToken  = "tok-buyer-9f2d41"
	buyerID     = "22222222-2222-4222-8222-222222222222"
	strangerTok = "tok-stranger-7c3a"
	strangerID  = "33333333-3333-4333-8333-333333333333"
	account     = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	otherAcct   = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
)

// fakeIdentity is an httptest identity service with a fixed directory:
// staff (staff, member of nothing), buyer (owner of account) and stranger
// (a member of nothing). Setting override replaces every answer.
type fakeIdentity struct {
	srv      *httptest.Server
	calls    atomic.Int64
	mu       sync.Mutex
	override http.HandlerFunc
	lastAuth string
	lastTP   string
}

func newFakeIdentity(t testing.TB) *fakeIdentity {
	f := &fakeIdentity{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeIdentity) setOverride(h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override = h
}

func (f *fakeIdentity) serve(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.mu.Lock()
	f.lastAuth, f.lastTP = r.Header.Get("Authorization"), r.Header.Get("traceparent")
	override := f.override
	f.mu.Unlock()
	if override != nil {
		override(w, r)
		return
	}
	f.directory(w, r)
}

// directory answers from the fixed directory; an override can defer to it.
func (f *fakeIdentity) directory(w http.ResponseWriter, r *http.Request) {
	users := map[string]struct {
		id    string
		staff bool
		roles map[string]string
	}{
		"Bearer " + staffToken:  {staffID, true, nil},
		"Bearer " + buyerToken:  {buyerID, false, map[string]string{account: "owner"}},
		"Bearer " + strangerTok: {strangerID, false, nil},
	}
	u, ok := users[r.Header.Get("Authorization")]
	if !ok {
		problem(w, http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/v1/operator/me":
		if !u.staff {
			problem(w, http.StatusForbidden)
			return
		}
		writeJSON(w, 200, map[string]any{"user": map[string]any{"id": u.id, "email": "staff@example.com", "staff": true}})
	case r.URL.Path == "/v1/operator/publisher":
		if !u.staff {
			problem(w, http.StatusForbidden)
			return
		}
		writeJSON(w, 200, map[string]any{"user_id": u.id, "api_key_id": nil})
	case r.URL.Path == "/v1/me":
		writeJSON(w, 200, map[string]any{"id": u.id, "email": "x@example.com", "display_name": "", "staff": u.staff})
	case strings.HasPrefix(r.URL.Path, "/v1/accounts/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/accounts/")
		role, ok := u.roles[id]
		if !ok {
			problem(w, http.StatusNotFound)
			return
		}
		writeJSON(w, 200, map[string]any{"id": id, "name": "Team", "slug": "team", "personal": false, "role": role})
	default:
		problem(w, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"type":"about:blank","status":`+http.StatusText(status)+`}`)
}

// env is box's handler over a fresh database and a fake identity.
type env struct {
	t        testing.TB
	db       *sqldb.DB
	identity *fakeIdentity
	handler  http.Handler
	logs     *logtest.Buffer // log output from concurrent handlers
}

type envOptions struct {
	identityURL     *string // nil: the fake's URL
	identityTimeout time.Duration
	capabilityTTL   time.Duration
	bare            bool // no OpenAPI check, which reads every request body
}

func newEnv(t testing.TB, engine sqldb.Engine, opts envOptions) *env {
	t.Helper()
	logger, logs := logtest.New()
	e := &env{t: t, db: sqltest.Open(t, engine, sqlstore.Migrations), identity: newFakeIdentity(t), logs: logs}
	url := e.identity.srv.URL
	if opts.identityURL != nil {
		url = *opts.identityURL
	}
	timeout := opts.identityTimeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	client := httpapi.NewIdentity(url, timeout, logger)
	t.Cleanup(client.Close)
	svc := box.NewService(sqlstore.New(e.db), client, opts.capabilityTTL).WithLicensing(testLicensing())
	e.handler = httpapi.NewServer(httpapi.Deps{Service: svc, Logger: logger, Idempotency: idempotency.New(e.db, make([]byte, idempotency.SecretSize)), Ready: func(context.Context) httpx.Readiness {
		return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok"}}
	}})
	// Every request and response of the suite is checked against the
	// OpenAPI document. Benchmarks measure the bare handler; the fuzz
	// target wraps each input with its own *testing.T, because a
	// *testing.F cannot report from inside the fuzz function.
	switch t.(type) {
	case *testing.B, *testing.F:
	default:
		if opts.bare {
			break
		}
		e.handler = openapitest.Wrap(t, httpapi.OpenAPI(), e.handler)
	}
	return e
}

// response is a recorded answer with its decoded JSON body.
type response struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

func (r response) errorCode() string {
	if e, ok := r.body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (r response) errorMessage() string {
	if e, ok := r.body["error"].(map[string]any); ok {
		s, _ := e["message"].(string)
		return s
	}
	return ""
}

func (r response) object(key string) map[string]any {
	m, _ := r.body[key].(map[string]any)
	return m
}

func (r response) list(key string) []map[string]any {
	items, _ := r.body[key].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

// do sends a request; token "" sends no Authorization header.
func (e *env) do(method, path, token, body string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	res := response{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &res.body); err != nil {
			e.t.Fatalf("%s %s: body is not a JSON object: %q", method, path, rec.Body.String())
		}
	}
	return res
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// written counts every row box writes, to show that a refused call wrote
// nothing.
func (e *env) written() int {
	e.t.Helper()
	n := 0
	for _, table := range []string{"entitlements", "entitlement_events", "capabilities", "releases", "approvals", "claims", "installations"} {
		n += e.count("SELECT count(*) FROM " + table)
	}
	return n
}

// grant grants product to acct as staff and returns the row.
func (e *env) grant(acct, product, versionRange string) map[string]any {
	e.t.Helper()
	body := `{"account_id":"` + acct + `","product":"` + product + `"`
	if versionRange != "" {
		body += `,"version_range":"` + versionRange + `"`
	}
	res := e.do("POST", "/v1/operator/entitlements", staffToken, body+`}`)
	if res.status != http.StatusCreated {
		e.t.Fatalf("grant %s: %d %s", product, res.status, res.raw)
	}
	return res.object("entitlement")
}

func idPath(row map[string]any) string {
	return jsonNumber(row["id"])
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
