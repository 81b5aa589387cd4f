//go:build e2e

// Package scaleout is the scale-out test of deploy.md section 3: the real
// binary as three identity replicas, two box replicas, two gateways and
// three outbox publishers on one PostgreSQL server and one JetStream, with
// mixed load through both gateways, then every invariant the databases
// keep checked, and every event shown delivered exactly once to a
// deduplicating consumer.
package scaleout

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// boxMasterKey seals box's idempotent replays; every box replica shares it.
const boxMasterKey = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="

// cluster is the running topology.
//
// Each gateway takes one upstream address per service, as a production
// gateway takes one Service address that a load balancer spreads. Rather
// than put a balancer in the test, each gateway gets its own replicas:
// gateway A → identity 1 and box 1, gateway B → identity 2 and box 2. Both
// box replicas ask identity 3 for membership and staff checks, and
// identity 3 is also the issuer whose key set the gateways fetch. So every
// replica serves traffic, and a story that alternates gateways crosses
// replicas at every step: a user registered through identity 1 signs in
// through identity 2, a grant written by box 1 is revoked by box 2. That
// only works if no replica keeps state of its own (signing keys, sessions,
// rate limits of logins): they are all in the shared database.
type cluster struct {
	identityEnv e2e.Env // identity's variables without PORT (for the CLI)
	identityDB  *sqldb.DB
	boxDB       *sqldb.DB
	eventsURL   string

	identity   []*e2e.Proc
	box        []*e2e.Proc
	gateways   []*e2e.Proc
	publishers []*e2e.Proc // every publisher process started, killed ones too
	pubEnv     e2e.Env
	// stall is publisher 2's way to the broker (see killHoldingRows).
	stall *stallProxy
}

// requirePostgres skips without TEST_DATABASE_URL, except in CI, where a
// missing database would silently drop the test.
func requirePostgres(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("TEST_DATABASE_URL is not set in CI: the scale-out test needs PostgreSQL (SKIP LOCKED claims, replicas sharing one database)")
	}
	t.Skip("TEST_DATABASE_URL not set: the scale-out test needs PostgreSQL (several replicas on one database)")
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	requirePostgres(t)
	e2e.Binary(t) // build once before anything starts the clock

	// The broker runs inside the test process, so the stream is this
	// test's alone: the publishers write to the platform's stream name,
	// which a shared server (EVENTS_URL) holds for everyone.
	broker := eventstest.Embedded(t)
	c := &cluster{eventsURL: broker.URL}
	c.stall = newStallProxy(t, strings.TrimPrefix(broker.URL, "nats://"))

	// One PostgreSQL server, a database per service (deploy.md section 3).
	identityURL := sqltest.URL(t, sqldb.Postgres)
	boxURL := sqltest.URL(t, sqldb.Postgres)

	ports := []int{e2e.FreePort(t), e2e.FreePort(t), e2e.FreePort(t)}
	issuer := fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	c.identityEnv = e2e.Env{
		"DATABASE_URL":        identityURL,
		"IDENTITY_MASTER_KEY": e2e.MasterKey(),
		// Every replica signs with the keys in the shared database and
		// names the same issuer, so a token from one is good at all.
		"IDENTITY_ISSUER": issuer,
		"LOG_LEVEL":       "warn",
	}
	e2e.MustRun(t, c.identityEnv, "identity", "migrate")
	boxEnv := e2e.Env{
		"DATABASE_URL":     boxURL,
		"BOX_IDENTITY_URL": issuer,
		"BOX_MASTER_KEY":   boxMasterKey,
		// Both replicas share box's durable consumer of
		// identity.account.deleted.
		"EVENTS_URL": c.eventsURL,
		"LOG_LEVEL":  "warn",
	}
	e2e.MustRun(t, boxEnv, "box", "migrate")

	// Identity replicas run no publisher of their own (no EVENTS_URL): the
	// three standalone publishers below are the only ones, so the one
	// killed mid-run is a third of the publishing capacity.
	for _, port := range ports {
		env := with(c.identityEnv, e2e.Env{"PORT": strconv.Itoa(port)})
		c.identity = append(c.identity, e2e.StartOn(t, port, env, "identity", "serve"))
	}
	for range 2 {
		c.box = append(c.box, e2e.Start(t, boxEnv, "box", "serve"))
	}
	for i := range 2 {
		c.gateways = append(c.gateways, e2e.Start(t, e2e.Env{
			"IDENTITY_URL":    c.identity[i].URL,
			"IDENTITY_ISSUER": issuer,
			"BOX_URL":         c.box[i].URL,
			// The load comes from one address; the per-caller limit is
			// not what this test measures.
			"GATEWAY_RATE_LIMIT": "1000000",
			"LOG_LEVEL":          "warn",
		}, "gateway", "serve"))
	}
	// Debug logs carry each batch a publisher marks, so the test can tell
	// which publishers did the work.
	c.pubEnv = e2e.Env{"DATABASE_URL": identityURL, "LOG_LEVEL": "debug"}
	for i := range 3 {
		url := c.eventsURL
		if i == 1 {
			url = "nats://" + c.stall.addr
		}
		c.startPublisher(t, url)
	}
	for _, p := range append(append(append([]*e2e.Proc{}, c.identity...), c.box...), c.gateways...) {
		waitReady(t, p)
	}
	c.identityDB = openDB(t, identityURL)
	c.boxDB = openDB(t, boxURL)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t)
		}
	})
	return c
}

// startPublisher starts one more `platform events publish --service
// identity`, publishing to eventsURL.
func (c *cluster) startPublisher(t *testing.T, eventsURL string) {
	t.Helper()
	env := with(c.pubEnv, e2e.Env{"EVENTS_URL": eventsURL})
	c.publishers = append(c.publishers, e2e.Spawn(t, env, "events", "publish", "--service", "identity"))
}

func (c *cluster) dumpLogs(t *testing.T) {
	for i, p := range c.identity {
		t.Logf("--- identity %d ---\n%s", i+1, tail(p.Logs()))
	}
	for i, p := range c.box {
		t.Logf("--- box %d ---\n%s", i+1, tail(p.Logs()))
	}
	for i, p := range c.gateways {
		t.Logf("--- gateway %c ---\n%s", 'A'+i, tail(p.Logs()))
	}
	for i, p := range c.publishers {
		t.Logf("--- publisher %d ---\n%s", i+1, tail(p.Logs()))
	}
}

// tail keeps the end of a long log.
func tail(s string) string {
	const max = 8000
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

func with(base, extra e2e.Env) e2e.Env {
	out := e2e.Env{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// waitReady waits for /readyz: the database gate open, not only the
// listener up.
func waitReady(t *testing.T, p *e2e.Proc) {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	testutil.Eventually(t, 30*time.Second, p.URL+" to be ready", func() bool {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", p.URL, p.Logs())
		}
		resp, err := client.Get(p.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func openDB(t *testing.T, rawURL string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), rawURL)
	if err != nil {
		t.Fatalf("open %s: %v", rawURL, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// count runs a query answering one integer.
func count(t *testing.T, db *sqldb.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// column runs a query answering one text column.
func column(t *testing.T, db *sqldb.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
