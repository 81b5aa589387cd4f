//go:build e2e

package scaleout

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/testutil"
)

const (
	loadDuration = 20 * time.Second
	workers      = 4
	// killAfter is when, into the load, one publisher is killed, and
	// downFor how long it stays down before a replacement starts.
	killAfter = 6 * time.Second
	downFor   = 3 * time.Second
)

// TestScaleOut runs the topology of deploy.md section 3 under mixed load
// through both gateways, kills one publisher with SIGKILL mid-run and
// starts another, then checks every invariant identity's and box's
// databases keep, that every answer was one the contract allows, and that
// every outbox row reached a deduplicating consumer exactly once.
func TestScaleOut(t *testing.T) {
	began := time.Now()
	c := startCluster(t)
	t.Logf("topology up in %s (the binary built, 10 processes started)", time.Since(began).Round(time.Millisecond))
	gwA, gwB := c.gateways[0].URL, c.gateways[1].URL

	// The operator: registered through gateway A, made staff with the
	// operator command, signed in through gateway B.
	rec := newRecorder()
	staffEmail := "operator-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	a, ok := rec.call("register", gwA, "POST", "/v1/users", "", map[string]string{"email": staffEmail, "password": password}, 201)
	if !ok {
		t.Fatalf("register the operator: %v", rec.unexpected)
	}
	rec.users = append(rec.users, a.str("id"))
	e2e.MustRun(t, c.identityEnv, "identity", "staff", "add", staffEmail)
	a, ok = rec.call("login", gwB, "POST", "/v1/session", "", map[string]string{"email": staffEmail, "password": password}, 201)
	if !ok {
		t.Fatalf("operator login: %v", rec.unexpected)
	}

	consumer := startDedupConsumer(t, c.eventsURL)
	l := &load{rec: rec, gateways: [2]string{gwA, gwB}, staff: a.str("token"), db: c.identityDB,
		masterKey: c.identityEnv["IDENTITY_MASTER_KEY"], run: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}

	// Kill a publisher mid-run while it holds rows it has published and
	// not marked: they stay leased to it until the lease ends, then the
	// other publishers' SKIP LOCKED claims take them and publish them
	// again, and the broker's duplicate window keeps one copy each. A
	// replacement starts while the load still runs.
	start := time.Now()
	storiesDone := make(chan int, 1)
	go func() { storiesDone <- l.drive(workers, loadDuration) }()
	time.Sleep(killAfter)
	held, killedAt := killHoldingRows(t, c, 1)
	testutil.Eventually(t, 5*time.Second, "the killed publisher's messages in the stream", func() bool { return consumer.hasAll(held) })
	time.Sleep(downFor)
	c.startPublisher(t, c.eventsURL)
	stories := <-storiesDone
	elapsed := time.Since(start)
	t.Logf("%d stories by %d workers in %s through 2 gateways; answers:\n%s", stories, workers, elapsed.Round(time.Millisecond), rec.summary())
	t.Logf("publisher 2 killed %s into the load holding %d published, unmarked rows; publisher 4 started %s later",
		killedAt.Sub(start).Round(time.Millisecond), len(held), downFor)

	// Every answer was one the contract allows: no 5xx, no transport
	// error, no race lost the wrong way.
	for _, u := range rec.unexpected {
		t.Error(u)
	}
	if stories < workers {
		t.Fatalf("only %d stories ran", stories)
	}

	// Delivery: every row published, none parked, and the consumer has
	// applied every one.
	drain := time.Now()
	testutil.Eventually(t, 60*time.Second, "every outbox row published and applied by the consumer", func() bool {
		pending := count(t, c.identityDB, `SELECT count(*) FROM outbox WHERE published_at IS NULL`)
		return pending == 0 && consumer.distinct() >= count(t, c.identityDB, `SELECT count(*) FROM outbox`)
	})
	testutil.Eventually(t, 15*time.Second, "the withheld acknowledgements redelivered", consumer.redeliveredWithheld)
	t.Logf("outbox drained and delivered %s after the load", time.Since(drain).Round(time.Millisecond))
	outboxIDs := column(t, c.identityDB, `SELECT id::text FROM outbox ORDER BY seq`)
	if n := waitPublished(t, c, held, killedAt); n != len(held) {
		t.Errorf("%d of the %d rows publisher 2 held when killed were marked before it died, want none", len(held)-n, len(held))
	}
	redeliveries := consumer.check(t, outboxIDs)
	if msgs := streamMessages(t, c.eventsURL); msgs != uint64(len(outboxIDs)) {
		t.Errorf("the stream holds %d messages for %d outbox rows", msgs, len(outboxIDs))
	}
	if redeliveries == 0 {
		t.Errorf("no event was redelivered: the consumer's deduplication was not exercised")
	}
	if n := count(t, c.identityDB, `SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL`); n != 0 {
		t.Errorf("%d outbox rows parked", n)
	}
	shares := publisherShares(t, c)
	t.Logf("%d events, each applied once; %d redeliveries deduplicated (%d acknowledgements withheld); rows marked per publisher %v",
		len(outboxIDs), redeliveries, consumer.withheld, shares)
	working := 0
	for _, n := range shares[:3] {
		if n > 0 {
			working++
		}
	}
	if working < 2 {
		t.Errorf("rows marked per publisher %v: the claims were not shared", shares)
	}

	checkEvents(t, c, rec)
	checkIdentity(t, c, rec)
	checkBox(t, c, rec, gwA)
}

// leasedRows lists the outbox rows a publisher holds under lease now:
// unpublished, unparked, and not due until the lease ends.
func leasedRows(t *testing.T, c *cluster) []string {
	t.Helper()
	return column(t, c.identityDB, `SELECT id::text FROM outbox
		WHERE published_at IS NULL AND parked_at IS NULL AND next_attempt_at > now()`)
}

// publisherShares sums, per publisher process, the rows its debug log says
// it marked published.
func publisherShares(t *testing.T, c *cluster) []int {
	t.Helper()
	shares := make([]int, len(c.publishers))
	for i, p := range c.publishers {
		for _, line := range strings.Split(p.Logs(), "\n") {
			if !strings.Contains(line, `"outbox: `) {
				continue
			}
			var rec struct {
				Msg       string `json:"msg"`
				Published int    `json:"published"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "outbox: ") {
				shares[i] += rec.Published
			}
		}
	}
	return shares
}
