package httpapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/identityclient"
	"github.com/platformco/platform/internal/courier/localmail"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	identityhttp "github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

var (
	identityToken = "identity:" + strings.Repeat("i", 32)
	otherToken    = "billing:" + strings.Repeat("b", 32)
)

type env struct {
	t       *testing.T
	db      *sqldb.DB
	handler http.Handler
	mailbox *localmail.Mailbox
	svc     *courier.Service
	idp     *identityProvider
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newEnv(t *testing.T, engine sqldb.Engine) *env { return newEnvWith(t, engine, 0, true) }

func newEnvWith(t *testing.T, engine sqldb.Engine, dbTimeout time.Duration, ready bool) *env {
	return newEnvPush(t, engine, dbTimeout, ready, nil)
}

// newEnvPush is newEnvWith with push on when push is set: it is given the
// store and the sealer and returns the Deps' Push.
func newEnvPush(t *testing.T, engine sqldb.Engine, dbTimeout time.Duration, ready bool, push func(*sqlstore.Store, *seal.Sealer) *courier.Push) *env {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	sealer, err := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := httpapi.ParseServiceTokens(identityToken + "," + otherToken)
	if err != nil {
		t.Fatal(err)
	}
	box, err := localmail.New(t.TempDir(), discard())
	if err != nil {
		t.Fatal(err)
	}
	idp := startIdentity(t, engine)
	store := sqlstore.New(db)
	svc := courier.NewService(store, sealer)
	var pm *courier.Push
	if push != nil {
		pm = push(store, sealer)
		svc.EnablePush(nil)
	}
	h := httpapi.NewServer(httpapi.Deps{Push: pm, VAPIDPublicKey: testVAPIDKey,
		Service: svc, Identity: idp.client, Tokens: tokens, Idempotency: idempotency.New(db, make([]byte, idempotency.SecretSize)), Logger: discard(),
		Mailbox: box.Page(), MailboxJSON: box.JSON(), DatabaseTimeout: dbTimeout,
		Ready: func(context.Context) httpx.Readiness {
			if !ready {
				return httpx.Readiness{Ready: false, Body: map[string]string{"status": "unavailable", "deps": string(engine)}}
			}
			return httpx.Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": string(engine)}}
		},
	})
	return &env{t: t, db: db, handler: h, mailbox: box, svc: svc, idp: idp}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

const verifyBody = `{"template":"verify_email","to":"ann@example.com","data":{"link":"https://app.example.com/verify?token=t0k3n"}}`

func TestRoutesMatchTheDocument(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckRoutes(t, httpapi.OpenAPI(), src, 8)
}

// coverage gathers the declared responses every test's client saw;
// TestMain checks, after a full run, that each was produced.
var coverage = &openapitest.Coverage{}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		var r openapitest.Recorder
		c := openapitest.NewClient(&r, httpapi.OpenAPI(), http.NotFoundHandler(), coverage)
		var missed []string
		for _, m := range c.Missed() {
			// The webhook routes need the event stream and receivers:
			// internal/courier/webhooks exercises them and checks theirs.
			if !strings.Contains(m, "/webhook_endpoints") {
				missed = append(missed, m)
			}
		}
		if len(missed) > 0 {
			fmt.Fprintf(os.Stderr, "declared responses no request produced (exercise them, or remove them from the document):\n\t%s\n", strings.Join(missed, "\n\t"))
			code = 1
		}
	}
	os.Exit(code)
}

func TestAPI(t *testing.T) {
	cov := coverage
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		c := openapitest.NewClient(t, httpapi.OpenAPI(), e.handler, cov)
		svc := openapitest.Bearer(identityToken)

		c.Do("GET", "/healthz", "", 200)
		c.Do("GET", "/readyz", "", 200)
		c.Do("GET", "/openapi.json", "", 200)

		var sent struct {
			Email struct{ ID, Status, Template, To string } `json:"email"`
		}
		c.JSON("POST", "/v1/emails", verifyBody, 202, &sent, svc)
		if sent.Email.Status != "queued" || sent.Email.To != "ann@example.com" || sent.Email.Template != "verify_email" {
			t.Errorf("202 body = %+v", sent.Email)
		}
		var got struct {
			Email map[string]any `json:"email"`
		}
		c.JSON("GET", "/v1/emails/"+sent.Email.ID, "", 200, &got, svc)
		raw, _ := json.Marshal(got)
		if strings.Contains(string(raw), "t0k3n") {
			t.Errorf("GET /v1/emails/{id} shows the data: %s", raw)
		}
		c.Code("GET", "/v1/emails/"+sent.Email.ID, "", 401, "unauthorized")
		c.Code("GET", "/v1/emails/"+sent.Email.ID, "", 401, "unauthorized", openapitest.Bearer("identity:"+strings.Repeat("x", 32)))
		c.Code("GET", "/v1/emails/not-a-uuid", "", 404, "not_found", svc)
		c.Code("GET", "/v1/emails/5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c", "", 404, "not_found", svc)

		for _, tt := range []struct{ name, body string }{
			{"UnknownTemplate", `{"template":"newsletter","to":"a@example.com","data":{}}`},
			{"MalformedAddress", `{"template":"welcome","to":"nobody","data":{}}`},
			{"MissingData", `{"template":"password_reset","to":"a@example.com","data":{}}`},
			{"NullData", `{"template":"password_reset","to":"a@example.com","data":null}`},
			{"MixedScriptAddress", `{"template":"welcome","to":"\u0430lice@example.com","data":{}}`},
			{"FullwidthAddress", `{"template":"welcome","to":"\uff41\uff4c\uff49\uff43\uff45@example.com","data":{}}`},
			{"FullwidthDomain", `{"template":"welcome","to":"alice@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com","data":{}}`},
			{"HangulFillerAddress", `{"template":"welcome","to":"al\u3164ice@example.com","data":{}}`},
		} {
			w := c.Code("POST", "/v1/emails", tt.body, 422, "validation_failed", svc)
			if !strings.Contains(w.Body.String(), `"errors"`) {
				t.Errorf("%s: no field errors: %s", tt.name, w.Body)
			}
		}
		c.Code("POST", "/v1/emails", `{"template":"welcome","to":"a@example.com","extra":1}`, 400, "malformed_json", svc)
		c.Code("POST", "/v1/emails", "x", 415, "unsupported_media_type", svc, openapitest.Header("Content-Type", "text/plain"))
		c.Code("POST", "/v1/emails", `{"template":"`+strings.Repeat("a", 1<<20)+`"}`, 413, "body_too_large", svc)
		c.Code("POST", "/v1/emails", verifyBody, 401, "unauthorized")
		c.Code("POST", "/v1/emails", verifyBody, 400, "idempotency_key_invalid", svc, openapitest.Header("Idempotency-Key", strings.Repeat("k", 300)))
		if n := e.count(`SELECT count(*) FROM emails`); n != 1 {
			t.Errorf("emails = %d after refused requests, want 1", n)
		}

		c.Do("POST", "/v1/emails", verifyBody, 202, svc, openapitest.Header("Idempotency-Key", "k-1"))
		replay := c.Do("POST", "/v1/emails", verifyBody, 202, svc, openapitest.Header("Idempotency-Key", "k-1"))
		if replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay lacks Idempotent-Replayed")
		}
		c.Code("POST", "/v1/emails", strings.Replace(verifyBody, "ann@", "bob@", 1), 422, "idempotency_key_reused", svc, openapitest.Header("Idempotency-Key", "k-1"))
		// Another service's key space is its own.
		c.Do("POST", "/v1/emails", verifyBody, 202, openapitest.Bearer(otherToken), openapitest.Header("Idempotency-Key", "k-1"))
		if n := e.count(`SELECT count(*) FROM emails`); n != 3 {
			t.Errorf("emails = %d, want 3", n)
		}

		c.Do("POST", "/v1/suppressions", `{"address":"Spam@Example.com","reason":"complaint"}`, 201, svc)
		c.JSON("POST", "/v1/emails", `{"template":"welcome","to":"spam@example.com","data":{}}`, 202, &sent, svc)
		if sent.Email.Status != "suppressed" {
			t.Errorf("welcome to a complainant = %s, want suppressed", sent.Email.Status)
		}
		c.Code("POST", "/v1/suppressions", `{"address":"spam@example.com","reason":"hard_bounce"}`, 422, "validation_failed", svc)
		c.Code("POST", "/v1/suppressions", `{"address":"\uff53\uff50\uff41\uff4d@example.com","reason":"complaint"}`, 422, "validation_failed", svc)
		c.Code("POST", "/v1/suppressions", `{"address":"x"`, 400, "malformed_json", svc)
		c.Code("POST", "/v1/suppressions", "x", 415, "unsupported_media_type", svc, openapitest.Header("Content-Type", "text/plain"))
		c.Code("POST", "/v1/suppressions", `{"address":"`+strings.Repeat("a", 1<<20)+`"}`, 413, "body_too_large", svc)
		c.Code("POST", "/v1/suppressions", `{}`, 401, "unauthorized")

		c.Code("DELETE", "/v1/emails", "", 405, "method_not_allowed", svc)
		c.Code("GET", "/v1/nothing", "", 404, "not_found", svc)

		// The local mailbox (the send loop is not running here: it is empty).
		var box struct {
			Messages []map[string]any `json:"messages"`
		}
		c.JSON("GET", "/dev/mail.json", "", 200, &box)
		c.Do("GET", "/dev/mail", "", 200)
	})
	down := openapitest.NewClient(t, httpapi.OpenAPI(), newEnvWith(t, sqldb.SQLite, 0, false).handler, cov)
	down.Do("GET", "/readyz", "", 503)
	// The 409 (a request still running under its key) is exercised by
	// TestConcurrentSendsWithOneKeyStoreOneMessage, the 503s by
	// TestDatabaseTimeoutIs503.
	for _, r := range []string{"POST /v1/emails 409", "POST /v1/emails 503", "GET /v1/emails/{id} 503", "POST /v1/suppressions 503"} {
		cov.Add(r)
	}
}

// TestConcurrentSendsWithOneKeyStoreOneMessage races 50 identical sends
// under one Idempotency-Key: one message is stored, every 202 names it,
// and the others are told the first is still running.
func TestConcurrentSendsWithOneKeyStoreOneMessage(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		srv := httptest.NewServer(e.handler)
		t.Cleanup(srv.Close)
		client := &http.Client{Transport: openapitest.Transport(t, httpapi.OpenAPI(), http.DefaultTransport), Timeout: 30 * time.Second}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ids := map[string]bool{}
		statuses := map[int]int{}
		for range 50 {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/emails", strings.NewReader(verifyBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+identityToken)
				req.Header.Set("Idempotency-Key", "relay-7f3a")
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				var body struct {
					Email struct{ ID string } `json:"email"`
				}
				_ = json.NewDecoder(res.Body).Decode(&body)
				mu.Lock()
				defer mu.Unlock()
				statuses[res.StatusCode]++
				if res.StatusCode == 202 {
					ids[body.Email.ID] = true
				}
			})
		}
		wg.Wait()
		if n := e.count(`SELECT count(*) FROM emails`); n != 1 {
			t.Errorf("emails stored = %d, want 1", n)
		}
		if len(ids) != 1 || statuses[202]+statuses[409] != 50 {
			t.Errorf("answers = %v naming %d distinct emails; want only 202s naming one email and 409s", statuses, len(ids))
		}
	})
}

// TestDatabaseTimeoutIs503: database work past DATABASE_TIMEOUT answers
// 503 unavailable with Retry-After, never 500.
func TestDatabaseTimeoutIs503(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnvWith(t, engine, time.Nanosecond, true)
		c := openapitest.NewClient(t, httpapi.OpenAPI(), e.handler, nil)
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/emails", verifyBody},
			{"GET", "/v1/emails/5f0c3b8e-1a2d-4e6f-9b7c-0d1e2f3a4b5c", ""},
			{"POST", "/v1/suppressions", `{"address":"a@example.com","reason":"complaint"}`},
		} {
			w := c.Code(r.method, r.path, r.body, 503, "unavailable", openapitest.Bearer(identityToken))
			if w.Header().Get("Retry-After") == "" {
				t.Errorf("%s %s: no Retry-After", r.method, r.path)
			}
		}
		if n := e.count(`SELECT count(*) FROM emails`); n != 0 {
			t.Errorf("emails = %d after timed-out sends, want 0", n)
		}
	})
}

// identityProvider is a real identity service in process, and courier's
// client of it.
type identityProvider struct {
	env    *identitytest.Env
	srv    *httptest.Server
	client *identityclient.Client
}

func startIdentity(t *testing.T, engine sqldb.Engine) *identityProvider {
	t.Helper()
	ienv := identitytest.New(t, engine, identitytest.Config{})
	srv := httptest.NewServer(identityhttp.NewServer(identityhttp.Deps{Service: ienv.Service, Logger: discard()}))
	t.Cleanup(srv.Close)
	client := identityclient.New(identityclient.Options{Issuer: identitytest.Issuer, JWKSURL: srv.URL + "/.well-known/jwks.json",
		BaseURL: srv.URL, Timeout: 2 * time.Second, Logger: discard()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { client.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 10*time.Second, "identity's key set to load", client.KeysUsable)
	return &identityProvider{env: ienv, srv: srv, client: client}
}

// user registers email and returns a signed-in token.
func (p *identityProvider) user(t *testing.T, email string) string {
	t.Helper()
	p.env.Register(t, email)
	return p.env.Login(t, email)
}

func TestPreferences(t *testing.T) {
	cov := coverage
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		c := openapitest.NewClient(t, httpapi.OpenAPI(), e.handler, cov)
		tok := e.idp.user(t, "Pat@Example.com")
		me := openapitest.Bearer(tok)
		var got struct {
			Preferences courier.Preferences `json:"preferences"`
		}
		c.JSON("GET", "/v1/me/preferences", "", 200, &got, me)
		if got.Preferences != courier.DefaultPreferences() {
			t.Errorf("defaults = %+v, want every category on", got.Preferences)
		}
		c.JSON("PATCH", "/v1/me/preferences", `{"account_activity":false}`, 200, &got, me)
		want := courier.Preferences{ProductUpdates: true, ReleaseAnnouncements: true, AccountActivity: false}
		if got.Preferences != want {
			t.Errorf("after PATCH = %+v, want %+v", got.Preferences, want)
		}
		c.JSON("PATCH", "/v1/me/preferences", `{"product_updates":false}`, 200, &got, me)
		want.ProductUpdates = false
		if got.Preferences != want {
			t.Errorf("after a second PATCH = %+v, want %+v (the whole set)", got.Preferences, want)
		}
		c.JSON("GET", "/v1/me/preferences", "", 200, &got, me)
		if got.Preferences != want {
			t.Errorf("GET = %+v, want %+v", got.Preferences, want)
		}
		for _, body := range []string{`{"newsletter":false}`, `{"account_activity":"no"}`, `{"account_activity":null}`} {
			c.Code("PATCH", "/v1/me/preferences", body, 422, "validation_failed", me)
		}
		c.Code("PATCH", "/v1/me/preferences", `{"account_activity":`, 400, "malformed_json", me)
		c.Code("PATCH", "/v1/me/preferences", "x", 415, "unsupported_media_type", me, openapitest.Header("Content-Type", "text/plain"))
		c.Code("PATCH", "/v1/me/preferences", `{"account_activity":"`+strings.Repeat("a", 1<<20)+`"}`, 413, "body_too_large", me)
		c.Code("GET", "/v1/me/preferences", "", 401, "unauthorized")
		c.Code("PATCH", "/v1/me/preferences", `{}`, 401, "unauthorized")
		c.Code("GET", "/v1/me/preferences", "", 401, "unauthorized", openapitest.Bearer(tok+"x"))
		c.Code("GET", "/v1/me/preferences", "", 401, "unauthorized", openapitest.Bearer(identityToken))

		// The preference follows the user's address: a welcome to it is
		// suppressed, a security message is not.
		svc := openapitest.Bearer(identityToken)
		var sent struct {
			Email struct{ Status string } `json:"email"`
		}
		c.JSON("POST", "/v1/emails", `{"template":"welcome","to":"pat@example.com"}`, 202, &sent, svc)
		if sent.Email.Status != "suppressed" {
			t.Errorf("welcome with account_activity off = %s, want suppressed", sent.Email.Status)
		}
		c.JSON("POST", "/v1/emails", `{"template":"mfa_enabled_notice","to":"pat@example.com"}`, 202, &sent, svc)
		if sent.Email.Status != "queued" {
			t.Errorf("a security message with account_activity off = %s, want queued", sent.Email.Status)
		}
		var reason string
		if err := e.db.QueryRow(context.Background(), `SELECT data FROM outbox WHERE type = 'courier.notification.suppressed'`).Scan(&reason); err != nil || !strings.Contains(reason, "preference_off") {
			t.Errorf("suppressed event = %q, %v; want reason preference_off", reason, err)
		}

		// Identity gone: a valid token cannot be trusted, so 503, never 401.
		e.idp.srv.Close()
		c.Code("GET", "/v1/me/preferences", "", 503, "unavailable", me)
		c.Code("PATCH", "/v1/me/preferences", `{"account_activity":true}`, 503, "unavailable", me)
	})
}

// TestConcurrentPatchesKeepEveryCategory races patches of different
// categories by one user: each lands.
func TestConcurrentPatchesKeepEveryCategory(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		tok := e.idp.user(t, "quinn@example.com")
		var wg sync.WaitGroup
		for _, body := range []string{`{"product_updates":false}`, `{"release_announcements":false}`, `{"account_activity":false}`} {
			wg.Go(func() {
				req := httptest.NewRequest("PATCH", "/v1/me/preferences", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Errorf("PATCH %s = %d %s", body, rec.Code, rec.Body)
				}
			})
		}
		wg.Wait()
		u, err := e.idp.client.User(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.svc.Preferences(context.Background(), u)
		if err != nil || got != (courier.Preferences{}) {
			t.Errorf("preferences = %+v, %v; want every category off", got, err)
		}
	})
}
