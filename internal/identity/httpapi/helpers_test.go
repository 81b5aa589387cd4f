package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
)

// server is identity's handler over a fresh database, wired as
// identitycmd wires it.
type server struct {
	env  *identitytest.Env
	h    http.Handler
	logs *logtest.Buffer // the service's log lines from concurrent requests
}

func newServer(t testing.TB, engine sqldb.Engine, cfg identitytest.Config) *server {
	t.Helper()
	env := identitytest.New(t, engine, cfg)
	logger, logs := logtest.New()
	h := httpapi.NewServer(httpapi.Deps{
		Service:     env.Service,
		Idempotency: idempotency.New(env.DB, make([]byte, idempotency.SecretSize)),
		Ready: func(ctx context.Context) httpx.Readiness {
			if err := env.DB.Ready(ctx); err != nil {
				return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": string(env.DB.Engine)}}
			}
			return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": string(env.DB.Engine)}}
		},
		Logger: logger,
	})
	// Every request and response of the suite is checked against the
	// OpenAPI document (benchmarks measure the bare handler).
	if _, bench := t.(*testing.B); !bench {
		h = openapitest.Wrap(t, httpapi.OpenAPI(), h)
	}
	return &server{env: env, h: h, logs: logs}
}

// opt adjusts a request.
type opt func(r *http.Request)

func bearer(token string) opt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func cookie(token string) opt {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: token}) }
}

func header(k, v string) opt { return func(r *http.Request) { r.Header.Set(k, v) } }

// resp is an answered request.
type resp struct {
	*httptest.ResponseRecorder
	method, path string
}

// do sends a request. body is sent as is when it is a string, else
// encoded as JSON; nil sends none.
func (s *server) do(t testing.TB, method, path string, body any, opts ...opt) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	r := httptest.NewRequest(method, path, rd)
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(r)
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	return resp{w, method, path}
}

// want fails unless the response has status.
func (r resp) want(t testing.TB, status int) resp {
	t.Helper()
	if r.Code != status {
		t.Fatalf("%s %s = %d, want %d: %s", r.method, r.path, r.Code, status, r.Body)
	}
	return r
}

// object decodes a JSON object body.
func (r resp) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v: %s", r.method, r.path, err, r.Body)
	}
	return m
}

// array decodes a JSON array-of-objects body.
func (r resp) array(t testing.TB) []map[string]any {
	t.Helper()
	var a []map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s %s: body is not a JSON array of objects: %v: %s", r.method, r.path, err, r.Body)
	}
	return a
}

var (
	traceIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
	uuidPattern    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// problem fails unless the response is a problem with status and code,
// and returns it.
func (r resp) problem(t testing.TB, status int, code string) map[string]any {
	t.Helper()
	r.want(t, status)
	if ct := r.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: Content-Type %q, want application/problem+json", r.method, r.path, ct)
	}
	p := r.object(t)
	allowed := map[string]bool{"type": true, "status": true, "title": true, "detail": true, "code": true, "trace_id": true, "errors": true}
	for k := range p {
		if !allowed[k] {
			t.Errorf("%s %s: problem has field %q", r.method, r.path, k)
		}
	}
	if p["type"] != "about:blank" || p["status"] != float64(status) || p["title"] != http.StatusText(status) || p["code"] != code {
		t.Errorf("%s %s: problem = %v, want status %d, code %q", r.method, r.path, p, status, code)
	}
	if d, _ := p["detail"].(string); d == "" {
		t.Errorf("%s %s: problem has no detail", r.method, r.path)
	}
	if id, _ := p["trace_id"].(string); !traceIDPattern.MatchString(id) {
		t.Errorf("%s %s: trace_id %q", r.method, r.path, p["trace_id"])
	}
	return p
}

// fieldErrors returns a problem's errors as "field:code" strings.
func fieldErrors(p map[string]any) []string {
	list, _ := p["errors"].([]any)
	out := []string{}
	for _, e := range list {
		m, _ := e.(map[string]any)
		out = append(out, m["field"].(string)+":"+m["code"].(string))
	}
	return out
}

// wantKeys fails unless m has exactly keys.
func wantKeys(t testing.TB, what string, m map[string]any, keys ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(keys)
	if strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("%s has fields %v, want %v", what, got, keys)
	}
}

// signUp registers email over HTTP and returns the user's id and token.
func (s *server) signUp(t testing.TB, email string) (id, token string) {
	t.Helper()
	id = s.do(t, "POST", "/v1/users", map[string]string{"email": email, "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["id"].(string)
	s.verify(t, email)
	token = s.do(t, "POST", "/v1/session", map[string]string{"email": email, "password": identitytest.Password}).want(t, http.StatusCreated).object(t)["token"].(string)
	return id, token
}

var ctx = context.Background()

// verify verifies email over HTTP with the token of its queued link.
func (s *server) verify(t testing.TB, email string) {
	t.Helper()
	s.do(t, "POST", "/v1/email/verify", map[string]string{"token": s.env.LinkToken(t, email, identity.TemplateVerifyEmail)}).want(t, http.StatusOK)
}
