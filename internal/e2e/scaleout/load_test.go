//go:build e2e

package scaleout

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

const password = "correct-horse-battery-staple"

var httpClient = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64},
}

// answer is one HTTP answer, decoded.
type answer struct {
	status int
	body   map[string]any
}

func (a answer) str(key string) string {
	s, _ := a.body[key].(string)
	return s
}

func (a answer) obj(key string) answer {
	m, _ := a.body[key].(map[string]any)
	return answer{status: a.status, body: m}
}

// errorCode reads either envelope: box's {"error":{"code"}} or identity's
// problem "code".
func (a answer) errorCode() string {
	if c := a.obj("error").str("code"); c != "" {
		return c
	}
	return a.str("code")
}

// recorder keeps what the load saw and what it did, for the assertions
// afterwards. The load's goroutines never fail the test themselves
// (t.Fatal belongs to the test's goroutine): they record, and the test
// judges.
type recorder struct {
	mu         sync.Mutex
	statuses   map[string]map[int]int // operation → status → answers
	unexpected []string

	users       []string // ids of 201 registrations
	teams       []string // ids of team accounts created
	verified    int
	invited     int
	joined      int
	grants      int // 201 grants
	revokes     int // revokes that moved a row to revoked
	redeemed    int // 200 redemptions
	deletions   []deletion
	revokedEnts []int64
}

// deletion is a team account its owner deleted, with what box held for it
// then: box's consumer of identity.account.deleted must revoke the grant
// and void the outstanding capability.
type deletion struct {
	account, owner string
	entitlement    int64
	outstandingCap string
}

func newRecorder() *recorder { return &recorder{statuses: map[string]map[int]int{}} }

func (r *recorder) note(op string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses[op] == nil {
		r.statuses[op] = map[int]int{}
	}
	r.statuses[op][status]++
}

func (r *recorder) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unexpected) < 200 {
		r.unexpected = append(r.unexpected, fmt.Sprintf(format, args...))
	}
}

func (r *recorder) add(f func(r *recorder)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// summary lists the answers per operation, sorted.
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := make([]string, 0, len(r.statuses))
	for op := range r.statuses {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var b strings.Builder
	for _, op := range ops {
		codes := make([]int, 0, len(r.statuses[op]))
		for c := range r.statuses[op] {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		fmt.Fprintf(&b, "  %-28s", op)
		for _, c := range codes {
			fmt.Fprintf(&b, " %d×%d", c, r.statuses[op][c])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// call sends one request and records its answer; ok is false (and the
// answer recorded as unexpected) unless the status is one of want.
func (r *recorder) call(op, base, method, path, token string, body any, want ...int) (answer, bool) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		r.fail("%s: %v", op, err)
		return answer{}, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		r.note(op, 0)
		r.fail("%s %s %s: transport error: %v", op, method, base+path, err)
		return answer{}, false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode}
	_ = json.Unmarshal(raw, &a.body)
	r.note(op, a.status)
	if !slices.Contains(want, a.status) {
		r.fail("%s %s %s: status %d, want %v: %s", op, method, base+path, a.status, want, raw)
		return a, false
	}
	return a, true
}

// pair sends two requests at once and returns both answers.
func pair(f, g func() (answer, bool)) (answer, bool, answer, bool) {
	var (
		wg       sync.WaitGroup
		a1, a2   answer
		ok1, ok2 bool
	)
	wg.Add(2)
	go func() { defer wg.Done(); a1, ok1 = f() }()
	go func() { defer wg.Done(); a2, ok2 = g() }()
	wg.Wait()
	return a1, ok1, a2, ok2
}

// load drives the stories through the gateways.
type load struct {
	rec       *recorder
	gateways  [2]string
	staff     string // the operator's token
	db        *sqldb.DB
	masterKey string
	run       string
}

// story is one customer's journey, every step through a gateway and the
// steps alternating gateways (so replicas), with the races the invariants
// are about: two grants of one product at once, two redemptions of one
// capability at once. It returns at the first unexpected answer, which is
// recorded.
func (l *load) story(worker, i int) {
	r := l.rec
	gw, other := l.gateways[(worker+i)%2], l.gateways[(worker+i+1)%2]
	tag := fmt.Sprintf("%s-w%d-%d", l.run, worker, i)
	ownerEmail, memberEmail := "owner-"+tag+"@example.com", "member-"+tag+"@example.com"

	// The owner registers through one gateway and signs in through the
	// other: identity 1 writes the user, identity 2 checks the password.
	a, ok := r.call("register", gw, "POST", "/v1/users", "", map[string]string{"email": ownerEmail, "password": password}, 201)
	if !ok {
		return
	}
	ownerID := a.str("id")
	r.add(func(r *recorder) { r.users = append(r.users, ownerID) })
	a, ok = r.call("login", other, "POST", "/v1/session", "", map[string]string{"email": ownerEmail, "password": password}, 201)
	if !ok {
		return
	}
	owner := a.str("token")
	a, ok = r.call("create account", gw, "POST", "/v1/accounts", owner, map[string]string{"name": "Team " + tag}, 201)
	if !ok {
		return
	}
	team := a.str("id")
	r.add(func(r *recorder) { r.teams = append(r.teams, team) })
	if _, ok := r.call("list accounts", other, "GET", "/v1/accounts", owner, nil, 200); !ok {
		return
	}

	// The member registers, signs in, confirms the address (invitations
	// need a verified holder) and is invited.
	a, ok = r.call("register", other, "POST", "/v1/users", "", map[string]string{"email": memberEmail, "password": password}, 201)
	if !ok {
		return
	}
	memberID := a.str("id")
	r.add(func(r *recorder) { r.users = append(r.users, memberID) })
	a, ok = r.call("login", gw, "POST", "/v1/session", "", map[string]string{"email": memberEmail, "password": password}, 201)
	if !ok {
		return
	}
	member := a.str("token")
	verifyToken, err := l.mailToken(memberEmail)
	if err != nil {
		r.fail("verification mail for %s: %v", memberEmail, err)
		return
	}
	if _, ok := r.call("verify email", other, "POST", "/v1/email/verify", "", map[string]string{"token": verifyToken}, 200); !ok {
		return
	}
	r.add(func(r *recorder) { r.verified++ })
	a, ok = r.call("invite", gw, "POST", "/v1/accounts/"+team+"/invitations", owner, map[string]string{"email": memberEmail, "role": "member"}, 201)
	if !ok {
		return
	}
	r.add(func(r *recorder) { r.invited++ })
	invitation := a.str("token")
	a, ok = r.call("accept invitation", other, "POST", "/v1/invitations/accept", member, map[string]string{"token": invitation}, 200)
	if !ok {
		return
	}
	r.add(func(r *recorder) { r.joined++ })
	if a.str("user_id") != memberID || a.str("account_id") != team {
		r.fail("accept answered %v, want user %s in account %s", a.body, memberID, team)
	}
	if _, ok := r.call("accept invitation again", gw, "POST", "/v1/invitations/accept", member, map[string]string{"token": invitation}, 410); !ok {
		return
	}
	if _, ok := r.call("login wrong password", gw, "POST", "/v1/session", "", map[string]string{"email": memberEmail, "password": "not-the-password"}, 401); !ok {
		return
	}

	// The operator grants the paid unit through both gateways at once (a
	// retried reconciliation): box 1 and box 2 race on one (account,
	// product), and exactly one grant may win.
	grant := map[string]string{"account_id": team, "product": "platform", "version_range": "^1.0.0",
		"source": "reconciled_payment", "reference": "pi_" + tag}
	g1, ok1, g2, ok2 := pair(
		func() (answer, bool) {
			return r.call("grant", gw, "POST", "/v1/operator/entitlements", l.staff, grant, 201, 409)
		},
		func() (answer, bool) {
			return r.call("grant", other, "POST", "/v1/operator/entitlements", l.staff, grant, 201, 409)
		})
	if !ok1 || !ok2 {
		return
	}
	if (g1.status == 201) == (g2.status == 201) {
		r.fail("two concurrent grants for account %s answered %d and %d, want one 201 and one 409", team, g1.status, g2.status)
		return
	}
	r.add(func(r *recorder) { r.grants++ })
	ent := g1.obj("entitlement")
	if g2.status == 201 {
		ent = g2.obj("entitlement")
	}
	entID := int64(0)
	if f, ok := ent.body["id"].(float64); ok {
		entID = int64(f)
	}
	for _, g := range []answer{g1, g2} {
		if id, _ := g.obj("entitlement").body["id"].(float64); int64(id) != entID {
			r.fail("the concurrent grants for %s answered different entitlements %v and %v", team, g1.body, g2.body)
			return
		}
	}
	if _, ok := r.call("customer entitlements", other, "GET", "/v1/accounts/"+team+"/entitlements", member, nil, 200); !ok {
		return
	}

	// Both members check the artifact (box asks identity 3 about the
	// membership each time); the member's capability is then redeemed
	// through both gateways at once, and only one redemption may succeed.
	fetch := map[string]string{"artifact": "platform", "version_range": "^1.2.0"}
	a, ok = r.call("artifact fetch", other, "POST", "/v1/accounts/"+team+"/artifact_fetches", member, fetch, 201)
	if !ok {
		return
	}
	cap1 := a.obj("capability").str("token")
	a, ok = r.call("artifact fetch", gw, "POST", "/v1/accounts/"+team+"/artifact_fetches", owner, fetch, 201)
	if !ok {
		return
	}
	cap2 := a.obj("capability").str("token")
	redeem := func(base, token string) func() (answer, bool) {
		return func() (answer, bool) {
			return r.call("redeem", base, "POST", "/v1/capabilities/redeem", "", map[string]string{"token": token}, 200, 410)
		}
	}
	r1, ok1, r2, ok2 := pair(redeem(gw, cap1), redeem(other, cap1))
	if !ok1 || !ok2 {
		return
	}
	if (r1.status == 200) == (r2.status == 200) {
		r.fail("two concurrent redemptions of one capability answered %d and %d, want one 200 and one 410", r1.status, r2.status)
		return
	}
	r.add(func(r *recorder) { r.redeemed++ })
	for _, rr := range []answer{r1, r2} {
		if rr.status == 410 && rr.errorCode() != "capability_used" {
			r.fail("the losing redemption answered %s, want capability_used", rr.errorCode())
		}
	}

	if i%3 == 2 {
		// The owner deletes the team: box, told by the event, revokes the
		// grant and voids cap2 (checked after the load).
		if _, ok := r.call("delete account", gw, "DELETE", "/v1/accounts/"+team, owner, nil, 204); !ok {
			return
		}
		r.add(func(r *recorder) {
			r.deletions = append(r.deletions, deletion{account: team, owner: ownerID, entitlement: entID, outstandingCap: cap2})
		})
		r.call("read deleted account", other, "GET", "/v1/accounts/"+team, member, nil, 404)
		return
	}

	// Refund: the operator revokes through one gateway, a retry through
	// the other changes nothing; the owner's capability issued before is
	// refused, and a new check finds no entitlement.
	path := fmt.Sprintf("/v1/operator/entitlements/%d/revoke", entID)
	a, ok = r.call("revoke", other, "POST", path, l.staff, nil, 200)
	if !ok {
		return
	}
	if a.obj("entitlement").str("status") != "revoked" {
		r.fail("revoke answered %v", a.body)
	}
	r.add(func(r *recorder) { r.revokes++; r.revokedEnts = append(r.revokedEnts, entID) })
	if _, ok := r.call("revoke again", gw, "POST", path, l.staff, nil, 200); !ok {
		return
	}
	a, ok = r.call("redeem after revoke", gw, "POST", "/v1/capabilities/redeem", "", map[string]string{"token": cap2}, 410)
	if ok && a.errorCode() != "capability_expired" {
		r.fail("a capability of a revoked grant answered %s, want capability_expired", a.errorCode())
	}
	a, ok = r.call("artifact fetch after revoke", other, "POST", "/v1/accounts/"+team+"/artifact_fetches", member, fetch, 403)
	if ok && a.errorCode() != "entitlement_required" {
		r.fail("a fetch after the revoke answered %s, want entitlement_required", a.errorCode())
	}
}

// mailToken reads the verification link identity queued for address
// (mail_outbox, sealed with the master key), as the mail relay would
// before handing it to courier. It is e2e.MailToken without t, for the
// load's goroutines; the mail is written in the registration's
// transaction, so it is there once the 201 is.
func (l *load) mailToken(address string) (string, error) {
	master, err := base64.StdEncoding.DecodeString(l.masterKey)
	if err != nil {
		return "", err
	}
	sealer, err := identity.NewMailSealer(master)
	if err != nil {
		return "", err
	}
	m := identity.OutgoingMail{Template: identity.TemplateVerifyEmail, To: identity.NormalizeEmail(address)}
	err = l.db.QueryRow(context.Background(), `
		SELECT id, data_sealed FROM mail_outbox WHERE recipient = $1 AND template = $2 AND data_sealed IS NOT NULL
		ORDER BY created_at DESC, id DESC LIMIT 1`, m.To, m.Template).Scan(&m.ID, &m.Sealed)
	if err != nil {
		return "", err
	}
	data, err := sealer.Open(m)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(data["link"])
	if err != nil || u.Query().Get("token") == "" {
		return "", fmt.Errorf("the mail carries no link with a token")
	}
	return u.Query().Get("token"), nil
}

// drive runs stories on workers goroutines, each in a loop until d has
// passed (a story under way finishes), and returns how many ran.
func (l *load) drive(workers int, d time.Duration) (stories int) {
	deadline := time.Now().Add(d)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				l.story(w, i)
				mu.Lock()
				stories++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return stories
}
