package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/platformco/platform/internal/billing"
	"github.com/platformco/platform/internal/billing/boxclient"
	"github.com/platformco/platform/internal/billing/httpapi"
	"github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/billing/testproc"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// The fake identity's directory.
const (
	staffToken    = "tok-staff-5b1e0c"
	staffID       = "11111111-1111-4111-8111-111111111111"
	ownerToken    = "tok-owner-9f2d41"
	ownerID       = "22222222-2222-4222-8222-222222222222"
	memberToken   = "tok-member-7c3a"
	memberID      = "33333333-3333-4333-8333-333333333333"
	team          = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	personal      = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
	webhookSecret = "whsec_test_0123456789abcdef"
	museSecret    = "muse-secret-0123456789abcdef0123456789"
)

// fakeIdentity is an httptest identity: staff; owner (owner of team and of
// their personal account); member (a plain member of team). down makes
// every answer a 500.
type fakeIdentity struct {
	srv  *httptest.Server
	mu   sync.Mutex
	down bool
}

func newFakeIdentity(t testing.TB) *fakeIdentity {
	f := &fakeIdentity{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeIdentity) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeIdentity) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	type user struct {
		id, email string
		staff     bool
		roles     map[string]string
	}
	users := map[string]user{
		"Bearer " + staffToken:  {staffID, "staff@example.com", true, nil},
		"Bearer " + ownerToken:  {ownerID, "owner@example.com", false, map[string]string{team: "owner", personal: "owner"}},
		"Bearer " + memberToken: {memberID, "member@example.com", false, map[string]string{team: "member"}},
	}
	u, ok := users[r.Header.Get("Authorization")]
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": "unauthorized"})
		return
	}
	switch {
	case r.URL.Path == "/v1/operator/me":
		if !u.staff {
			writeJSON(w, http.StatusForbidden, map[string]any{"code": "forbidden"})
			return
		}
		writeJSON(w, 200, map[string]any{"user": map[string]any{"id": u.id, "email": u.email, "staff": true}})
	case r.URL.Path == "/v1/me":
		writeJSON(w, 200, map[string]any{"id": u.id, "email": u.email})
	case strings.HasPrefix(r.URL.Path, "/v1/accounts/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/accounts/")
		role, ok := u.roles[id]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"code": "not_found"})
			return
		}
		writeJSON(w, 200, map[string]any{"id": id, "name": "Team", "slug": "team", "personal": id == personal, "role": role})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"code": "not_found"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// env is billing over a fresh database, the fake identity and the test
// processor, served on a loopback listener so the test checkout can post
// to billing's own webhook route.
type env struct {
	t        testing.TB
	db       *sqldb.DB
	store    *sqlstore.Store
	identity *fakeIdentity
	proc     *testproc.Processor
	srv      *httptest.Server
	client   *http.Client
	logs     *logtest.Buffer
	logger   *slog.Logger
	ident    httpapi.Identity
	meters   *billing.MeterRelay
	mu       sync.RWMutex
	h        http.Handler
}

func newEnv(t testing.TB, engine sqldb.Engine) *env {
	t.Helper()
	return newEnvOn(t, sqltest.Open(t, engine, sqlstore.Migrations))
}

// newEnvOn is newEnv over db, migrated.
func newEnvOn(t testing.TB, db *sqldb.DB) *env {
	t.Helper()
	logger, logs := logtest.New()
	e := &env{t: t, db: db, identity: newFakeIdentity(t), logs: logs, logger: logger}
	e.store = sqlstore.New(e.db)
	e.ident = httpapi.NewIdentity(e.identity.srv.URL, 2*time.Second, logger)
	t.Cleanup(e.ident.Close)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.RLock()
		h := e.h
		e.mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	e.proc = testproc.New(testproc.Options{PublicURL: e.srv.URL, WebhookURL: e.srv.URL + "/v1/webhooks/stripe",
		WebhookSecret: webhookSecret, Logger: logger})
	e.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	e.withBox("")
	return e
}

// withBox serves billing with its inbox calling box at boxURL ("" for
// none: grants fail closed).
func (e *env) withBox(boxURL string) {
	svc := billing.NewService(e.store, e.ident, e.proc, "http://web.example")
	bc := boxclient.New(boxURL, 2*time.Second, e.logger)
	e.t.Cleanup(bc.Close)
	tokens, err := httpapi.ParseServiceTokens("muse:" + museSecret)
	if err != nil {
		e.t.Fatal(err)
	}
	e.meters = billing.NewMeterRelay(e.store, e.proc, e.logger)
	handler := httpapi.NewServer(httpapi.Deps{Service: svc, Webhooks: billing.NewWebhooks(e.store), ServiceTokens: tokens, Meters: e.meters,
		Inbox: billing.NewInbox(e.store, bc, svc), WebhookSecret: webhookSecret, DevCheckout: e.proc.Handler(), Logger: e.logger,
		Ready: func(context.Context) httpx.Readiness {
			return httpx.Readiness{Ready: true, Body: map[string]any{"status": "ok", "checks": map[string]string{"database": "ok"}}}
		}})
	switch e.t.(type) {
	case *testing.B:
	default:
		handler = openapitest.Wrap(e.t, httpapi.OpenAPI(), handler)
	}
	e.mu.Lock()
	e.h = handler
	e.mu.Unlock()
}

type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request to billing; headers alternate name, value.
func (e *env) do(method, path, token, body string, headers ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// post sends a signed webhook body to billing, signed at t.
func (e *env) webhookAt(payload []byte, secret string, at time.Time) response {
	e.t.Helper()
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
	return e.do("POST", "/v1/webhooks/stripe", "", string(payload), "Stripe-Signature", sp.Header)
}

func (e *env) webhook(payload []byte) response {
	return e.webhookAt(payload, webhookSecret, time.Now())
}

// stripeEvent builds a Stripe event body of typ around obj.
func stripeEvent(id, typ string, created int64, obj map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created,
		"livemode": false, "pending_webhooks": 1, "type": typ, "data": map[string]any{"object": obj}})
	return b
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// seed creates the four plans and returns them by name.
func (e *env) seed() map[string]billing.Plan {
	e.t.Helper()
	svc := billing.NewService(e.store, nil, e.proc, "")
	if _, err := svc.Seed(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	ps, err := e.store.Plans(context.Background(), false)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]billing.Plan{}
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}
