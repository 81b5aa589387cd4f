//go:build e2e

package reliability

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/sqldb"
)

var dbSeq atomic.Int64

// stack is identity and box as separate processes on a private PostgreSQL
// cluster; box reaches identity through a fault proxy.
type stack struct {
	pg           *pgCluster
	identityPort int
	identityEnv  e2e.Env
	identity     *e2e.Proc
	boxEnv       e2e.Env
	box          *e2e.Proc
	proxy        *faultProxy
	identityDB   *sqldb.DB
	boxDB        *sqldb.DB
}

type stackOptions struct {
	identity e2e.Env // extra identity variables
	box      e2e.Env // extra box variables
}

func newStack(t *testing.T, pg *pgCluster, opts stackOptions) *stack {
	t.Helper()
	n := dbSeq.Add(1)
	s := &stack{pg: pg, identityPort: e2e.FreePort(t)}
	s.identityEnv = e2e.Env{
		"PORT":                strconv.Itoa(s.identityPort),
		"DATABASE_URL":        pg.createDB(t, fmt.Sprintf("identity_%d", n)),
		"IDENTITY_MASTER_KEY": e2e.MasterKey(),
		"IDENTITY_ISSUER":     fmt.Sprintf("http://127.0.0.1:%d", s.identityPort),
	}
	for k, v := range opts.identity {
		s.identityEnv[k] = v
	}
	e2e.MustRun(t, s.identityEnv, "identity", "migrate")
	s.identity = e2e.StartOn(t, s.identityPort, s.identityEnv, "identity", "serve")
	s.proxy = newFaultProxy(t, s.identity.URL)

	s.boxEnv = e2e.Env{
		"DATABASE_URL":         pg.createDB(t, fmt.Sprintf("box_%d", n)),
		"BOX_IDENTITY_URL":     s.proxy.URL,
		"BOX_IDENTITY_TIMEOUT": "1s",
		"BOX_MASTER_KEY":       "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
	}
	for k, v := range opts.box {
		s.boxEnv[k] = v
	}
	e2e.MustRun(t, s.boxEnv, "box", "migrate")
	s.box = e2e.Start(t, s.boxEnv, "box", "serve")
	s.identityDB = openDB(t, s.identityEnv["DATABASE_URL"])
	s.boxDB = openDB(t, s.boxEnv["DATABASE_URL"])
	return s
}

// restartIdentity starts identity again on its port after a stop. It
// replaces s.identity: a goroutine running meanwhile keeps s.identity.URL,
// which does not change, instead of reading the field.
func (s *stack) restartIdentity(t *testing.T) {
	t.Helper()
	s.identity = e2e.StartOn(t, s.identityPort, s.identityEnv, "identity", "serve")
}

// user is a registered, signed-in caller.
type user struct {
	id, email, password, token string
}

func password(email string) string { return "pw:" + email + ":horse-battery" }

// register registers email and signs in.
func (s *stack) register(t *testing.T, email string) user {
	t.Helper()
	u := user{email: email, password: password(email)}
	anon := e2e.Client{Base: s.identity.URL}
	u.id = anon.Do(t, "POST", "/v1/users", map[string]string{"email": email, "password": u.password}).
		Expect(t, http.StatusCreated).JSON(t)["id"].(string)
	u.token = s.login(t, u)
	// Verified, so the user can accept invitations sent to the address.
	e2e.VerifyEmail(t, s.identity.URL, s.identityDB, s.identityEnv["IDENTITY_MASTER_KEY"], email)
	return u
}

func (s *stack) login(t *testing.T, u user) string {
	t.Helper()
	r := e2e.Client{Base: s.identity.URL}.Do(t, "POST", "/v1/session", map[string]string{"email": u.email, "password": u.password})
	return r.Expect(t, http.StatusCreated).JSON(t)["token"].(string)
}

// staff registers email, marks them staff and signs in.
func (s *stack) staff(t *testing.T, email string) user {
	t.Helper()
	u := s.register(t, email)
	e2e.MustRun(t, s.identityEnv, "identity", "staff", "add", email)
	return u
}

func (s *stack) identityAs(u user) e2e.Client {
	return e2e.Client{Base: s.identity.URL, Token: u.token}
}
func (s *stack) boxAs(u user) e2e.Client { return e2e.Client{Base: s.box.URL, Token: u.token} }

// team makes owner create a team account and returns its id.
func (s *stack) team(t *testing.T, owner user, name string) string {
	t.Helper()
	return s.identityAs(owner).Do(t, "POST", "/v1/accounts", map[string]string{"name": name}).
		Expect(t, http.StatusCreated).JSON(t)["id"].(string)
}

// boxRows counts every row box writes.
func (s *stack) boxRows(t *testing.T) int {
	t.Helper()
	n := 0
	for _, table := range []string{"entitlements", "entitlement_events", "capabilities", "releases", "approvals", "claims"} {
		n += count(t, s.boxDB, "SELECT count(*) FROM "+table)
	}
	return n
}

// ready reports /readyz's status.
func ready(base string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func healthz(base string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// uniq returns a short unique suffix for names.
func uniq() string {
	return strings.ReplaceAll(strconv.FormatInt(time.Now().UnixNano(), 36), "-", "")
}
