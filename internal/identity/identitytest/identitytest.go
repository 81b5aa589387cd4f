// Package identitytest builds an identity service over a fresh, migrated
// database for tests: cheap argon2 parameters, one injectable clock shared
// by the service and the database, and a random master key. It also reads
// the tables tests inspect (the outbox, invitations, signing keys).
package identitytest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// CheapHash makes a password hash cost microseconds, for tests that are
// not about the hash's cost.
var CheapHash = identity.HashParams{MemoryKiB: 64, Passes: 1, Threads: 1}

// Issuer is the issuer every test service signs with.
const Issuer = "http://identity.test"

// Password is the password Register gives every user.
const Password = "correct horse battery"

// Clock is a manual clock: it stands still until a test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Config adjusts the service New builds; zero fields take the defaults
// noted.
type Config struct {
	Hash             identity.HashParams // CheapHash
	LockoutThreshold int                 // 5
	LockoutDuration  time.Duration       // 15m
	SessionTTL       time.Duration       // 12h
	MailPerAddress   int                 // identity.DefaultMailPerAddress
	MailPerUser      int                 // identity.DefaultMailPerUser
}

// Env is a service over its own database.
type Env struct {
	Engine    sqldb.Engine
	DB        *sqldb.DB
	Store     *sqlstore.Store
	Keys      *identity.Keys
	Ring      *identity.KeyRing
	Service   *identity.Service
	Clock     *Clock
	MasterKey []byte
	Options   identity.Options
}

// New returns a service over a fresh database on engine. The clock starts
// at the current second (token expiry is also checked against the real
// clock, so it must not start in the past) and only moves when told.
func New(t testing.TB, engine sqldb.Engine, cfg Config) *Env {
	t.Helper()
	if cfg.Hash == (identity.HashParams{}) {
		cfg.Hash = CheapHash
	}
	if cfg.LockoutThreshold == 0 {
		cfg.LockoutThreshold = 5
	}
	if cfg.LockoutDuration == 0 {
		cfg.LockoutDuration = 15 * time.Minute
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	db := sqltest.Open(t, engine, sqlstore.Migrations)
	clock := NewClock(time.Now().UTC().Truncate(time.Second))
	db.Now = clock.Now
	store := sqlstore.New(db)
	master := make([]byte, 32)
	if _, err := rand.Read(master); err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewKeys(store, master)
	if err != nil {
		t.Fatal(err)
	}
	ring := identity.NewKeyRing(keys)
	if err := ring.Refresh(context.Background()); err != nil {
		t.Fatalf("first key: %v", err)
	}
	opts := identity.Options{
		Issuer:           Issuer,
		SessionTTL:       cfg.SessionTTL,
		LockoutThreshold: cfg.LockoutThreshold,
		LockoutDuration:  cfg.LockoutDuration,
		Now:              clock.Now,
		MailPerAddress:   cfg.MailPerAddress,
		MailPerUser:      cfg.MailPerUser,
	}
	svc := identity.NewService(store, identity.NewHasher(cfg.Hash, 0), ring, opts)
	return &Env{Engine: engine, DB: db, Store: store, Keys: keys, Ring: ring, Service: svc, Clock: clock, MasterKey: master, Options: opts}
}

// Register registers email with Password and returns the user.
func (e *Env) Register(t testing.TB, email string) identity.User {
	t.Helper()
	u, err := e.Service.Register(context.Background(), identity.RegisterInput{Email: email, Password: Password})
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	return u
}

// Login signs email in with Password and returns the token.
func (e *Env) Login(t testing.TB, email string) string {
	t.Helper()
	tok, _, err := e.Service.Login(context.Background(), email, Password)
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	return tok
}

// Principal authenticates token, for accountID when not empty.
func (e *Env) Principal(t testing.TB, token, accountID string) identity.Principal {
	t.Helper()
	p, err := e.Service.Authenticate(context.Background(), token, accountID)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}

// User registers email, verifies it through its emailed link, signs in
// and returns the principal. (Register and Login make an unverified one.)
func (e *Env) User(t testing.TB, email string) identity.Principal {
	t.Helper()
	e.Register(t, email)
	e.Verify(t, identity.NormalizeEmail(email))
	return e.Principal(t, e.Login(t, email), "")
}

// For returns p's principal for accountID (Account nil when p is not a
// member), read afresh from the store.
func (e *Env) For(t testing.TB, p identity.Principal, accountID string) identity.Principal {
	t.Helper()
	q, err := e.Store.Authenticate(context.Background(), p.SessionID, p.User.ID, accountID)
	if err != nil {
		t.Fatalf("authenticate for %s: %v", accountID, err)
	}
	return q
}

// Team creates a team account owned by owner and returns owner's
// principal for it.
func (e *Env) Team(t testing.TB, owner identity.Principal, name string) identity.Principal {
	t.Helper()
	a, err := e.Service.CreateAccount(context.Background(), owner, name)
	if err != nil {
		t.Fatalf("create account %q: %v", name, err)
	}
	return e.For(t, owner, a.ID)
}

// Join makes p a member of admin's account with role, through an
// invitation, and returns p's principal for the account.
func (e *Env) Join(t testing.TB, admin, p identity.Principal, role identity.Role) identity.Principal {
	t.Helper()
	ctx := context.Background()
	inv, err := e.Service.Invite(ctx, admin, p.User.Email, role)
	if err != nil {
		t.Fatalf("invite %s: %v", p.User.Email, err)
	}
	_, err = e.Service.AcceptInvitation(ctx, p, inv.Token)
	if errs.Code(err) == identity.CodeEmailNotVerified {
		// Only a verified holder of the invited address accepts: verify
		// through the link identity mailed at registration, then accept.
		e.Verify(t, p.User.Email)
		_, err = e.Service.AcceptInvitation(ctx, p, inv.Token)
	}
	if err != nil {
		t.Fatalf("accept as %s: %v", p.User.Email, err)
	}
	return e.For(t, p, admin.Account.ID)
}

// OutboxRow is one row of the outbox as tests inspect it.
type OutboxRow struct {
	Seq         int64
	ID          string
	Type        string
	Source      string
	Subject     string
	Time        time.Time
	Data        map[string]any
	CreatedAt   time.Time
	PublishedAt *time.Time
	Attempts    int
	NextAttempt time.Time
}

// Outbox returns every outbox row in creation order.
func (e *Env) Outbox(t testing.TB) []OutboxRow {
	t.Helper()
	rows, err := e.DB.Query(context.Background(), `
		SELECT seq, id, type, source, subject, time, data, created_at, published_at, attempts, next_attempt_at
		FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	defer rows.Close()
	var out []OutboxRow
	for rows.Next() {
		var (
			r         OutboxRow
			data      []byte
			published sql.NullTime
		)
		if err := rows.Scan(&r.Seq, &r.ID, &r.Type, &r.Source, &r.Subject, &r.Time, &data, &r.CreatedAt, &published, &r.Attempts, &r.NextAttempt); err != nil {
			t.Fatalf("scan outbox: %v", err)
		}
		if err := json.Unmarshal(data, &r.Data); err != nil {
			t.Fatalf("outbox row %d: data is not a JSON object: %v (%s)", r.Seq, err, data)
		}
		if published.Valid {
			p := published.Time
			r.PublishedAt = &p
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	return out
}

// Count returns the number of rows in table (a fixed name chosen by the
// test, never input).
func (e *Env) Count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := e.DB.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// Counts returns the row counts of every identity table, to show that a
// refused request wrote nothing.
func (e *Env) Counts(t testing.TB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"users", "sessions", "accounts", "memberships", "invitations", "signing_keys", "outbox", "staff_audit", "user_tokens", "mail_outbox"} {
		out[table] = e.Count(t, table)
	}
	return out
}

// Mail returns the template data of every queued mail to address with
// template, oldest first, opened as the relay would.
func (e *Env) Mail(t testing.TB, address, template string) []map[string]string {
	t.Helper()
	rows, err := e.DB.Query(context.Background(), `
		SELECT id, template, recipient, data_sealed FROM mail_outbox
		WHERE recipient = $1 AND template = $2 AND data_sealed IS NOT NULL ORDER BY created_at, id`, address, template)
	if err != nil {
		t.Fatalf("read mail outbox: %v", err)
	}
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		var m identity.OutgoingMail
		if err := rows.Scan(&m.ID, &m.Template, &m.To, &m.Sealed); err != nil {
			t.Fatalf("scan mail outbox: %v", err)
		}
		data, err := e.Service.MailSealer().Open(m)
		if err != nil {
			t.Fatalf("open mail: %v", err)
		}
		out = append(out, data)
	}
	return out
}

// LinkToken returns the token of the newest queued mail to address with
// template (the token parameter of its link).
func (e *Env) LinkToken(t testing.TB, address, template string) string {
	t.Helper()
	mails := e.Mail(t, address, template)
	if len(mails) == 0 {
		t.Fatalf("no %s mail queued for %s", template, address)
	}
	link := mails[len(mails)-1]["link"]
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("%s mail to %s: link %q carries no token", template, address, link)
	}
	return u.Query().Get("token")
}

// Verify verifies address through its emailed link and returns the user.
func (e *Env) Verify(t testing.TB, address string) identity.User {
	t.Helper()
	u, err := e.Service.VerifyEmail(context.Background(), e.LinkToken(t, address, identity.TemplateVerifyEmail))
	if err != nil {
		t.Fatalf("verify %s: %v", address, err)
	}
	return u
}
