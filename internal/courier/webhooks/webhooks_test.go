package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/httpapi"
	"github.com/platformco/platform/internal/courier/identityclient"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/courier/webhooks"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/consumer"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/idempotency"
	"github.com/platformco/platform/internal/identity"
	identityhttp "github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fastSchedule retries at once, so tests walk the whole schedule.
var fastSchedule = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}

type env struct {
	t         *testing.T
	db        *sqldb.DB
	store     *sqlstore.Store
	hooks     *courier.Webhooks
	handler   http.Handler
	api       *openapitest.Client
	idp       *identitytest.Env
	idpSrv    *httptest.Server
	owner     string // token of the team's owner
	member    string // token of a plain member
	outsider  string // token of a user outside the team
	accountID string
	broker    *eventstest.Broker
	js        jetstream.JetStream
}

func newEnv(t *testing.T, engine sqldb.Engine, development bool) *env {
	t.Helper()
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	if _, err := consumer.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	idp := identitytest.New(t, engine, identitytest.Config{})
	idpSrv := httptest.NewServer(identityhttp.NewServer(identityhttp.Deps{Service: idp.Service, Logger: discard()}))
	t.Cleanup(idpSrv.Close)
	client := identityclient.New(identityclient.Options{Issuer: identitytest.Issuer, JWKSURL: idpSrv.URL + "/.well-known/jwks.json",
		BaseURL: idpSrv.URL, Timeout: 2 * time.Second, Logger: discard()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { client.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 10*time.Second, "identity's key set", client.KeysUsable)

	login := func(email string) (string, identity.Principal) {
		idp.Register(t, email)
		tok := idp.Login(t, email)
		return tok, idp.Principal(t, tok, "")
	}
	ownerTok, owner := login("owner@example.com")
	memberTok, member := login("member@example.com")
	outsiderTok, _ := login("outsider@example.com")
	team := idp.Team(t, owner, "Engines")
	idp.Join(t, team, member, identity.RoleMember)

	sealer, _ := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	store := sqlstore.New(db)
	hooks := courier.NewWebhooks(store, sealer, development)
	h := httpapi.NewServer(httpapi.Deps{Service: courier.NewService(store, sealer), Webhooks: hooks, Identity: client,
		Idempotency: idempotency.New(db, make([]byte, idempotency.SecretSize)), Logger: discard(),
		Ready: func(context.Context) httpx.Readiness { return httpx.Readiness{Ready: true, Body: map[string]string{}} }})
	broker := eventstest.Embedded(t)
	_, js := eventstest.Connect(t, broker)
	return &env{t: t, db: db, store: store, hooks: hooks, handler: h, api: openapitest.NewClient(t, httpapi.OpenAPI(), h, coverage),
		idp: idp, idpSrv: idpSrv, owner: ownerTok, member: memberTok, outsider: outsiderTok, accountID: team.Account.ID,
		broker: broker, js: js}
}

// coverage gathers the declared responses the tests saw; TestMain checks,
// after a full run, that every response of the webhook routes was produced.
var coverage = &openapitest.Coverage{}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		var rec openapitest.Recorder
		c := openapitest.NewClient(&rec, httpapi.OpenAPI(), http.NotFoundHandler(), coverage)
		var missed []string
		for _, r := range c.Missed() {
			if strings.Contains(r, "/webhook_endpoints") {
				missed = append(missed, r)
			}
		}
		if len(missed) > 0 {
			fmt.Fprintf(os.Stderr, "declared webhook responses no request produced:\n\t%s\n", strings.Join(missed, "\n\t"))
			code = 1
		}
	}
	os.Exit(code)
}

func (e *env) path(rest string) string {
	return "/v1/accounts/" + e.accountID + "/webhook_endpoints" + rest
}

type created struct {
	Endpoint struct {
		ID         string   `json:"id"`
		URL        string   `json:"url"`
		EventTypes []string `json:"event_types"`
		Disabled   bool     `json:"disabled"`
	} `json:"endpoint"`
	Secret string `json:"secret"`
}

func (e *env) createEndpoint(url string, types ...string) created {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"url": url, "event_types": types})
	var c created
	e.api.JSON("POST", e.path(""), string(body), 201, &c, openapitest.Bearer(e.owner))
	return c
}

// publish puts an envelope of typ about the team account on the stream.
func (e *env) publish(typ, subject string) string {
	e.t.Helper()
	env := events.Envelope{SpecVersion: "1.0", ID: uuid.NewString(), Type: typ, Source: "identity", Subject: subject,
		Time: time.Now().UTC().Truncate(time.Millisecond), Data: json.RawMessage(`{"account_id":"` + subject + `"}`)}
	body, err := json.Marshal(env)
	if err != nil {
		e.t.Fatal(err)
	}
	msg := nats.NewMsg(e.broker.Stream.Subject(typ))
	msg.Data = body
	msg.Header.Set("Nats-Msg-Id", env.ID)
	if _, err := e.js.PublishMsg(context.Background(), msg); err != nil {
		e.t.Fatal(err)
	}
	return env.ID
}

// runConsumer runs one courier replica's stream consumer (under the
// consumer lease, as Consume does) until the test ends.
func (e *env) runConsumer() {
	e.t.Helper()
	eventstest.EnsureStream(e.t, e.js, e.broker)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = webhooks.ConsumeFrom(ctx, e.db, e.js, nil, discard()); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
}

func (e *env) deliverer(development bool) *webhooks.Deliverer {
	return webhooks.NewDeliverer(e.store, e.hooks, webhooks.NewClient(development), webhooks.Options{Schedule: fastSchedule, Poll: 5 * time.Millisecond}, discard())
}

// receiver is a webhook endpoint that verifies the Standard Webhooks
// signature with its own code (not courier's) and records what it got.
type receiver struct {
	*httptest.Server
	secret  string
	mu      sync.Mutex
	got     map[string]int // verified webhook-id → deliveries
	bodies  []string
	bad     int
	answers []int // status to answer per call, then 200
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{got: map[string]int{}, answers: answers}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ts, sigs := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sec, perr := strconv.ParseInt(ts, 10, 64)
	ok := false
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			ok = true
		}
	}
	if err != nil || perr != nil || !ok || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		r.bad++
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	if len(r.answers) > 0 {
		status := r.answers[0]
		r.answers = r.answers[1:]
		w.WriteHeader(status)
		io.WriteString(w, "not now")
		return
	}
	r.got[id]++
	r.bodies = append(r.bodies, string(body))
	io.WriteString(w, "thanks")
}

func (r *receiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

func TestEndpointManagement(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		c := e.createEndpoint("http://127.0.0.1:9/hook", "identity.member.joined", "identity.member.joined", "identity.account.updated")
		if !strings.HasPrefix(c.Secret, "whsec_") || len(c.Endpoint.EventTypes) != 2 {
			t.Fatalf("created = %+v", c)
		}
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(c.Secret, "whsec_"))
		if len(raw) != 32 {
			t.Errorf("secret decodes to %d bytes, want 32", len(raw))
		}
		var sealed []byte
		if err := e.db.QueryRow(context.Background(), `SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`, c.Endpoint.ID).Scan(&sealed); err != nil || strings.Contains(string(sealed), c.Secret[6:]) {
			t.Errorf("the secret is stored in the clear (%v)", err)
		}
		owner := openapitest.Bearer(e.owner)
		var got map[string]any
		e.api.JSON("GET", e.path("/"+c.Endpoint.ID), "", 200, &got, owner)
		if strings.Contains(mustJSON(got), c.Secret) {
			t.Errorf("GET shows the secret")
		}
		var list struct{ Endpoints []map[string]any }
		e.api.JSON("GET", e.path(""), "", 200, &list, owner)
		if len(list.Endpoints) != 1 {
			t.Errorf("list = %d endpoints, want 1", len(list.Endpoints))
		}
		var patched created
		e.api.JSON("PATCH", e.path("/"+c.Endpoint.ID), `{"disabled":true,"description":"CRM"}`, 200, &patched, owner)
		if !patched.Endpoint.Disabled {
			t.Errorf("PATCH disabled = false")
		}
		var rotated created
		e.api.JSON("POST", e.path("/"+c.Endpoint.ID+"/rotate_secret"), "", 200, &rotated, owner)
		if rotated.Secret == c.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
			t.Errorf("rotated secret = %q", rotated.Secret)
		}

		for _, tt := range []struct{ name, body, field string }{
			{"UnknownType", `{"url":"http://127.0.0.1:9/","event_types":["courier.email.queued"]}`, "event_types"},
			{"NoTypes", `{"url":"http://127.0.0.1:9/","event_types":[]}`, "event_types"},
			{"NotHTTPS", `{"url":"http://example.com/","event_types":["identity.member.joined"]}`, "url"},
			{"NotAURL", `{"url":"ftp://example.com/","event_types":["identity.member.joined"]}`, "url"},
			{"Credentials", `{"url":"https://u:p@example.com/","event_types":["identity.member.joined"]}`, "url"},
		} {
			w := e.api.Code("POST", e.path(""), tt.body, 422, "validation_failed", owner)
			if !strings.Contains(w.Body.String(), `"field":"`+tt.field+`"`) {
				t.Errorf("%s: %s, want a field error on %s", tt.name, w.Body, tt.field)
			}
		}
		e.api.Code("POST", e.path(""), `{"url":1}`, 400, "malformed_json", owner)
		e.api.Code("POST", e.path(""), `{}`, 401, "unauthorized")
		e.api.Code("POST", e.path(""), `{"url":"http://127.0.0.1:9/","event_types":["identity.member.joined"]}`, 403, "forbidden", openapitest.Bearer(e.member))
		e.api.Code("GET", e.path(""), "", 404, "not_found", openapitest.Bearer(e.outsider))
		e.api.Code("GET", e.path("/"+uuid.NewString()), "", 404, "not_found", owner)
		e.api.Code("GET", e.path("/"+c.Endpoint.ID), "", 403, "forbidden", openapitest.Bearer(e.member))
		e.api.Do("DELETE", e.path("/"+c.Endpoint.ID), "", 204, owner)
		e.api.Code("DELETE", e.path("/"+c.Endpoint.ID), "", 404, "not_found", owner)

		// Identity down: roles cannot be asked, so 503, never a guess.
		e.idpSrv.Close()
		e.api.Code("GET", e.path(""), "", 503, "unavailable", owner)
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAddressGuardOutsideDevelopment(t *testing.T) {
	e := newEnv(t, sqldb.SQLite, false)
	owner := openapitest.Bearer(e.owner)
	for _, tt := range []struct{ url, rule string }{
		{"http://127.0.0.1:8080/", "https_required"},
		{"https://127.0.0.1/", "private_address"},
		{"https://10.1.2.3/", "private_address"},
		{"https://169.254.169.254/latest/meta-data", "private_address"},
		{"https://[::1]/", "private_address"},
		{"https://localhost/", "private_address"},
	} {
		w := e.api.Code("POST", e.path(""), `{"url":"`+tt.url+`","event_types":["identity.member.joined"]}`, 422, "validation_failed", owner)
		if !strings.Contains(w.Body.String(), tt.rule) {
			t.Errorf("%s: %s, want %s", tt.url, w.Body, tt.rule)
		}
	}
}

// TestAddressGuardAtConnectTime checks the address each connection
// reaches, whatever the URL said: a receiver on loopback that validation
// let in (development) is refused by a production delivery client, and
// the refusal is the attempt's logged error.
func TestAddressGuardAtConnectTime(t *testing.T) {
	e := newEnv(t, sqldb.SQLite, true)
	r := newReceiver(t)
	c := e.createEndpoint(r.URL+"/hook", "identity.member.joined")
	r.secret = c.Secret
	e.runConsumer()
	e.publish("identity.member.joined", e.accountID)
	d := e.deliverer(false)
	var log struct {
		Deliveries []struct {
			Attempts []struct {
				Category string `json:"error_category"`
				Error    string `json:"error"`
			} `json:"attempts"`
		} `json:"deliveries"`
	}
	testutil.Eventually(t, 10*time.Second, "a refused attempt", func() bool {
		d.DeliverDue(context.Background())
		e.api.JSON("GET", e.path("/"+c.Endpoint.ID+"/deliveries"), "", 200, &log, openapitest.Bearer(e.owner))
		return len(log.Deliveries) == 1 && len(log.Deliveries[0].Attempts) > 0
	})
	if a := log.Deliveries[0].Attempts[0]; a.Category != "blocked_address" || strings.Contains(a.Error, "127.0.0.1") {
		t.Errorf("attempt = %+v, want the address refusal, without the address", a)
	}
	if len(r.bodies) != 0 || r.bad != 0 {
		t.Errorf("the loopback receiver was reached")
	}
	for _, target := range []string{r.URL, "http://10.0.0.1:80/", "http://169.254.169.254/"} {
		_, err := webhooks.NewClient(false).Get(target)
		if err == nil || !errors.Is(err, webhooks.ErrAddressRefused) {
			t.Errorf("GET %s = %v, want the address refusal", target, err)
		}
	}
}

func TestDeliveryIsSignedRetriedAndLogged(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		r := newReceiver(t, 500, 503)
		c := e.createEndpoint(r.URL+"/hook", "identity.member.joined")
		r.secret = c.Secret
		other := e.createEndpoint(r.URL+"/other", "identity.account.updated")
		_ = other
		e.runConsumer()
		id := e.publish("identity.member.joined", e.accountID)
		e.publish("identity.member.joined", uuid.NewString()) // another account: not ours
		d := e.deliverer(true)
		testutil.Eventually(t, 10*time.Second, "the delivery", func() bool {
			d.DeliverDue(context.Background())
			return r.count(id) == 1
		})
		var env events.Envelope
		if err := json.Unmarshal([]byte(r.bodies[0]), &env); err != nil || env.ID != id || env.Subject != e.accountID {
			t.Errorf("body = %s (%v), want the envelope", r.bodies[0], err)
		}
		if r.bad != 0 {
			t.Errorf("%d requests failed the receiver's signature check", r.bad)
		}
		var log struct {
			Deliveries []struct {
				ID       string `json:"id"`
				Status   string `json:"status"`
				EventID  string `json:"event_id"`
				Attempts []struct {
					StatusCode *int   `json:"status_code"`
					Response   string `json:"response"`
					Category   string `json:"error_category"`
					Error      string `json:"error"`
				} `json:"attempts"`
			} `json:"deliveries"`
			NextCursor *string `json:"next_cursor"`
		}
		owner := openapitest.Bearer(e.owner)
		e.api.JSON("GET", e.path("/"+c.Endpoint.ID+"/deliveries?limit=10"), "", 200, &log, owner)
		if len(log.Deliveries) != 1 || log.Deliveries[0].Status != "succeeded" || len(log.Deliveries[0].Attempts) != 3 {
			t.Fatalf("log = %+v, want one succeeded delivery after 3 attempts", log)
		}
		if a := log.Deliveries[0].Attempts[0]; a.StatusCode == nil || *a.StatusCode != 500 || a.Response != "not now" ||
			a.Category != "http_status" || a.Error != "the endpoint answered 500, not 2xx" {
			t.Errorf("first attempt = %+v, want 500 'not now' (http_status)", a)
		}
		if a := log.Deliveries[0].Attempts[2]; a.Category != "" || a.Error != "" {
			t.Errorf("the successful attempt = %+v, want no error", a)
		}
		// A manual retry delivers again at once.
		e.api.Do("POST", e.path("/"+c.Endpoint.ID+"/deliveries/"+log.Deliveries[0].ID+"/retry"), "", 202, owner)
		testutil.Eventually(t, 10*time.Second, "the manual retry", func() bool {
			d.DeliverDue(context.Background())
			return r.count(id) == 2
		})
		e.api.Code("POST", e.path("/"+c.Endpoint.ID+"/deliveries/"+uuid.NewString()+"/retry"), "", 404, "not_found", owner)
		e.api.Code("GET", e.path("/"+c.Endpoint.ID+"/deliveries?limit=0"), "", 422, "validation_failed", owner)
		e.api.Code("GET", e.path("/"+c.Endpoint.ID+"/deliveries?cursor=bad!!"), "", 422, "validation_failed", owner)
	})
}

func TestDeliveryFailsAfterTheScheduleAndRedirectsAreNotFollowed(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		elsewhere := newReceiver(t)
		redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/stolen", http.StatusTemporaryRedirect))
		t.Cleanup(redirect.Close)
		c := e.createEndpoint(redirect.URL+"/hook", "identity.member.joined")
		e.runConsumer()
		e.publish("identity.member.joined", e.accountID)
		d := e.deliverer(true)
		var log struct {
			Deliveries []struct {
				Status   string `json:"status"`
				Attempts []any  `json:"attempts"`
			} `json:"deliveries"`
		}
		testutil.Eventually(t, 10*time.Second, "the delivery to fail for good", func() bool {
			d.DeliverDue(context.Background())
			e.api.JSON("GET", e.path("/"+c.Endpoint.ID+"/deliveries"), "", 200, &log, openapitest.Bearer(e.owner))
			return len(log.Deliveries) == 1 && log.Deliveries[0].Status == "failed"
		})
		if n := len(log.Deliveries[0].Attempts); n != 1+len(fastSchedule) {
			t.Errorf("attempts = %d, want %d (the first and every retry)", n, 1+len(fastSchedule))
		}
		if len(elsewhere.bodies) != 0 || elsewhere.bad != 0 {
			t.Errorf("the redirect was followed")
		}
	})
}

func TestEndpointFailingForFiveDaysIsDisabled(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		r := newReceiver(t, 500)
		c := e.createEndpoint(r.URL+"/hook", "identity.member.joined")
		r.secret = c.Secret
		if _, err := e.db.Exec(context.Background(), `UPDATE webhook_endpoints SET failing_since = $2 WHERE id = $1`,
			c.Endpoint.ID, time.Now().UTC().Add(-courier.DisableAfter-time.Hour)); err != nil {
			t.Fatal(err)
		}
		e.runConsumer()
		e.publish("identity.member.joined", e.accountID)
		d := e.deliverer(true)
		var got created
		testutil.Eventually(t, 10*time.Second, "the endpoint to be disabled", func() bool {
			d.DeliverDue(context.Background())
			e.api.JSON("GET", e.path("/"+c.Endpoint.ID), "", 200, &got, openapitest.Bearer(e.owner))
			return got.Endpoint.Disabled
		})
		if len(r.bodies) != 0 {
			t.Errorf("a disabled endpoint received %d deliveries", len(r.bodies))
		}
	})
}

// TestTwoReplicasDeliverEachEventOncePerEndpoint runs two consumers and
// two delivery loops on one database and one stream.
func TestTwoReplicasDeliverEachEventOncePerEndpoint(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		r1, r2 := newReceiver(t), newReceiver(t)
		c1 := e.createEndpoint(r1.URL+"/a", "identity.member.joined", "identity.account.updated")
		c2 := e.createEndpoint(r2.URL+"/b", "identity.member.joined")
		r1.secret, r2.secret = c1.Secret, c2.Secret
		e.runConsumer()
		e.runConsumer()
		var ids []string
		for i := range 20 {
			typ := "identity.member.joined"
			if i%2 == 1 {
				typ = "identity.account.updated"
			}
			ids = append(ids, e.publish(typ, e.accountID))
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			d := e.deliverer(true)
			wg.Go(func() { d.Run(ctx) })
		}
		testutil.Eventually(t, 20*time.Second, "every delivery", func() bool {
			r1.mu.Lock()
			n1 := len(r1.bodies)
			r1.mu.Unlock()
			r2.mu.Lock()
			n2 := len(r2.bodies)
			r2.mu.Unlock()
			return n1 == 20 && n2 == 10
		})
		cancel()
		wg.Wait()
		for i, id := range ids {
			if n := r1.count(id); n != 1 {
				t.Errorf("endpoint 1 got event %s %d times, want once", id, n)
			}
			if want := 1 - i%2; r2.count(id) != want {
				t.Errorf("endpoint 2 got event %s %d times, want %d", id, r2.count(id), want)
			}
		}
		var n int
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries`).Scan(&n); err != nil || n != 30 {
			t.Errorf("deliveries = %d, want 30", n)
		}
	})
}

// TestWebhookRoutesRefuse walks every webhook route with each refusal:
// no token 401, a plain member 403, a non-member 404, bad bodies, and
// identity unreachable 503 (fail closed).
func TestWebhookRoutesRefuse(t *testing.T) {
	e := newEnv(t, sqldb.SQLite, true)
	c := e.createEndpoint("http://127.0.0.1:9/hook", "identity.member.joined")
	ep := "/" + c.Endpoint.ID
	routes := []struct{ method, path, body string }{
		{"POST", "", `{"url":"http://127.0.0.1:9/","event_types":["identity.member.joined"]}`},
		{"GET", "", ""},
		{"GET", ep, ""},
		{"PATCH", ep, `{"description":"x"}`},
		{"DELETE", ep, ""},
		{"POST", ep + "/rotate_secret", ""},
		{"GET", ep + "/deliveries", ""},
		{"POST", ep + "/deliveries/" + uuid.NewString() + "/retry", ""},
	}
	for _, r := range routes {
		e.api.Code(r.method, e.path(r.path), r.body, 401, "unauthorized")
		e.api.Code(r.method, e.path(r.path), r.body, 403, "forbidden", openapitest.Bearer(e.member))
		e.api.Code(r.method, e.path(r.path), r.body, 404, "not_found", openapitest.Bearer(e.outsider))
	}
	owner := openapitest.Bearer(e.owner)
	for _, path := range []string{"", ep} {
		method := map[string]string{"": "POST", ep: "PATCH"}[path]
		e.api.Code(method, e.path(path), `{"url":`, 400, "malformed_json", owner)
		e.api.Code(method, e.path(path), "x", 415, "unsupported_media_type", owner, openapitest.Header("Content-Type", "text/plain"))
		e.api.Code(method, e.path(path), `{"url":"`+strings.Repeat("a", 1<<20)+`"}`, 413, "body_too_large", owner)
	}
	e.api.Code("PATCH", e.path(ep), `{"url":"ftp://x"}`, 422, "validation_failed", owner)
	missing := "/" + uuid.NewString()
	e.api.Code("PATCH", e.path(missing), `{"description":"x"}`, 404, "not_found", owner)
	e.api.Code("POST", e.path(missing+"/rotate_secret"), "", 404, "not_found", owner)
	e.api.Code("GET", e.path(missing+"/deliveries"), "", 404, "not_found", owner)

	e.idpSrv.Close()
	for _, r := range routes {
		e.api.Code(r.method, e.path(r.path), r.body, 503, "unavailable", owner)
	}
}

// deliveryLog is an endpoint's delivery log as the API answers it.
type deliveryLog struct {
	Deliveries []struct {
		Status        string     `json:"status"`
		NextAttemptAt *time.Time `json:"next_attempt_at"`
		Attempts      []struct {
			At         time.Time `json:"at"`
			StatusCode *int      `json:"status_code"`
			LatencyMS  int64     `json:"latency_ms"`
			Category   string    `json:"error_category"`
			Error      string    `json:"error"`
		} `json:"attempts"`
	} `json:"deliveries"`
}

func (e *env) deliveryLog(endpointID string) deliveryLog {
	e.t.Helper()
	var log deliveryLog
	e.api.JSON("GET", e.path("/"+endpointID+"/deliveries"), "", 200, &log, openapitest.Bearer(e.owner))
	return log
}

// TestTimeoutIsRetriedOnTheSchedule: a receiver that does not answer
// within the client's timeout twice, then answers. Each silent attempt is
// logged as a timeout (no status code), its retry is scheduled by the
// schedule's step for that attempt, and the third attempt succeeds once.
func TestTimeoutIsRetriedOnTheSchedule(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, true)
		r := &receiver{got: map[string]int{}}
		var calls atomic.Int32
		r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if calls.Add(1) <= 2 {
				// Silent until the client gives up and closes the connection.
				select {
				case <-req.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return
			}
			r.serve(w, req)
		}))
		t.Cleanup(r.Close)
		c := e.createEndpoint(r.URL+"/hook", "identity.member.joined")
		r.secret = c.Secret
		e.runConsumer()
		id := e.publish("identity.member.joined", e.accountID)
		const timeout = 200 * time.Millisecond
		schedule := []time.Duration{700 * time.Millisecond, 1100 * time.Millisecond, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour}
		d := webhooks.NewDeliverer(e.store, e.hooks, webhooks.NewClientWith(webhooks.ClientOptions{Development: true, Timeout: timeout}),
			webhooks.Options{Schedule: schedule, Poll: 5 * time.Millisecond}, discard())
		for attempt := 1; attempt <= 2; attempt++ {
			var log deliveryLog
			testutil.Eventually(t, 10*time.Second, fmt.Sprintf("timed-out attempt %d", attempt), func() bool {
				d.DeliverDue(context.Background())
				log = e.deliveryLog(c.Endpoint.ID)
				return len(log.Deliveries) == 1 && len(log.Deliveries[0].Attempts) == attempt
			})
			dl := log.Deliveries[0]
			a := dl.Attempts[attempt-1]
			if a.StatusCode != nil || a.Category != "timeout" || a.Error != "no answer within "+timeout.String() || a.LatencyMS < timeout.Milliseconds() {
				t.Errorf("attempt %d = %+v, want a timeout after at least %s without a status", attempt, a, timeout)
			}
			if dl.Status != "pending" || dl.NextAttemptAt == nil {
				t.Fatalf("after attempt %d: %+v, want pending with a next attempt", attempt, dl)
			}
			// The next attempt is the schedule's step after this one
			// (taken from when it started, so its latency adds to it).
			gap := dl.NextAttemptAt.Sub(a.At)
			if step := schedule[attempt-1]; gap < step || gap > step+5*time.Second {
				t.Errorf("attempt %d: next attempt %s after it, want the schedule's %s", attempt, gap, step)
			}
		}
		testutil.Eventually(t, 10*time.Second, "the delivery after two timeouts", func() bool {
			d.DeliverDue(context.Background())
			return r.count(id) == 1
		})
		log := e.deliveryLog(c.Endpoint.ID)
		if dl := log.Deliveries[0]; dl.Status != "succeeded" || len(dl.Attempts) != 3 || dl.Attempts[2].StatusCode == nil || *dl.Attempts[2].StatusCode != 200 {
			t.Errorf("log = %+v, want succeeded on the third attempt", log)
		}
		if n := calls.Load(); n != 3 || r.bad != 0 {
			t.Errorf("receiver saw %d requests (%d with a bad signature), want 3 good ones", n, r.bad)
		}
	})
}

// TestAddressGuardOnResolvedNames: an endpoint named by a host name
// passes validation, but the name resolves (over real DNS) to a loopback,
// private or link-local address; outside development no connection is
// made, and the refusal is the attempt's logged error. The same resolver
// in development reaches the loopback receiver, so the refusals are the
// guard's and not a failed lookup.
func TestAddressGuardOnResolvedNames(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, false)
		dns := startDNS(t, map[string]string{
			"hooks.customer.test":    "127.0.0.1",
			"intranet.customer.test": "10.20.30.40",
			"metadata.customer.test": "169.254.169.254",
			"bench.customer.test":    "198.18.0.1",
			"reserved.customer.test": "240.0.0.1",
		})
		r := newReceiver(t)
		_, port, _ := strings.Cut(strings.TrimPrefix(r.URL, "http://"), ":")

		dev := webhooks.NewClientWith(webhooks.ClientOptions{Development: true, Resolver: dns.resolver()})
		res, err := dev.Get("http://hooks.customer.test:" + port + "/ping")
		if err != nil {
			t.Fatalf("development client through the test resolver: %v", err)
		}
		res.Body.Close()
		r.mu.Lock()
		reached := r.bad
		r.mu.Unlock()
		if reached != 1 {
			t.Fatalf("the receiver saw %d unsigned requests, want the development client's 1", reached)
		}

		prod := webhooks.NewClientWith(webhooks.ClientOptions{Resolver: dns.resolver()})
		for _, name := range []string{"hooks.customer.test:" + port, "intranet.customer.test", "metadata.customer.test", "bench.customer.test", "reserved.customer.test"} {
			if _, err := prod.Get("http://" + name + "/"); !errors.Is(err, webhooks.ErrAddressRefused) {
				t.Errorf("GET http://%s/ = %v, want the address refusal", name, err)
			}
		}

		c := e.createEndpoint("https://hooks.customer.test:"+port+"/hook", "identity.member.joined")
		r.secret = c.Secret
		e.runConsumer()
		e.publish("identity.member.joined", e.accountID)
		d := webhooks.NewDeliverer(e.store, e.hooks, prod, webhooks.Options{Schedule: fastSchedule, Poll: 5 * time.Millisecond}, discard())
		var log deliveryLog
		testutil.Eventually(t, 10*time.Second, "a refused attempt", func() bool {
			d.DeliverDue(context.Background())
			log = e.deliveryLog(c.Endpoint.ID)
			return len(log.Deliveries) == 1 && len(log.Deliveries[0].Attempts) > 0
		})
		if a := log.Deliveries[0].Attempts[0]; a.StatusCode != nil || a.Category != "blocked_address" || strings.Contains(a.Error, "127.0.0.1") {
			t.Errorf("attempt = %+v, want the address refusal, without the address", a)
		}
		// A name the resolver does not know: the admins read that it did
		// not resolve, never the resolver's address or the lookup's text.
		missing := e.createEndpoint("https://missing.customer.test/hook", "identity.member.joined")
		e.publish("identity.member.joined", e.accountID)
		testutil.Eventually(t, 10*time.Second, "an attempt to the unresolved name", func() bool {
			d.DeliverDue(context.Background())
			log = e.deliveryLog(missing.Endpoint.ID)
			return len(log.Deliveries) == 1 && len(log.Deliveries[0].Attempts) > 0
		})
		a := log.Deliveries[0].Attempts[0]
		resolver := dns.conn.LocalAddr().String()
		if a.Category != "dns" || strings.Contains(a.Error, resolver) || strings.Contains(a.Error, "lookup") || strings.Contains(a.Error, "127.0.0.1") {
			t.Errorf("attempt = %+v, want the dns category without the resolver (%s)", a, resolver)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.bodies) != 0 || r.bad != 1 {
			t.Errorf("the loopback receiver was reached outside development (%d deliveries, %d unsigned)", len(r.bodies), r.bad)
		}
	})
}
