package sqlstore_test

import (
	"database/sql"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// wantUnpublished fails unless r is a fresh, unpublished identity row
// written at now.
func wantUnpublished(t *testing.T, r identitytest.OutboxRow, now time.Time) {
	t.Helper()
	if r.Source != "identity" || r.PublishedAt != nil || r.Attempts != 0 {
		t.Errorf("%s: source %q, published_at %v, attempts %d; want identity, null, 0", r.Type, r.Source, r.PublishedAt, r.Attempts)
	}
	if !r.Time.Equal(now) || !r.CreatedAt.Equal(now) || !r.NextAttempt.Equal(now) {
		t.Errorf("%s: time %v, created_at %v, next_attempt_at %v; want all %v", r.Type, r.Time, r.CreatedAt, r.NextAttempt, now)
	}
	if len(r.ID) != 36 {
		t.Errorf("%s: envelope id %q is not a UUID", r.Type, r.ID)
	}
}

func TestRegister(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		now := env.Clock.Now()

		u, err := env.Service.Register(ctx, identity.RegisterInput{Email: "  Ada.Lovelace@Example.COM ", Password: "12345678", DisplayName: "  Ada  "})
		if err != nil {
			t.Fatalf("Register: %v", err)
		}
		if u.Email != "ada.lovelace@example.com" || u.DisplayName != "Ada" || len(u.ID) != 36 {
			t.Fatalf("user = %+v, want normalised address and trimmed display name", u)
		}

		// The personal account, its owner membership and the two events
		// were written together.
		tok, _, err := env.Service.Login(ctx, "ADA.Lovelace@example.com", "12345678")
		if err != nil {
			t.Fatalf("login in another case: %v", err)
		}
		if p := env.Principal(t, tok, ""); p.User.ID != u.ID {
			t.Errorf("login as the registered address signs in %s, want %s", p.User.ID, u.ID)
		}
		accounts, _, err := env.Store.ListAccounts(ctx, u.ID, allPage)
		if err != nil || len(accounts) != 1 {
			t.Fatalf("ListAccounts = %v, %v; want the personal account", accounts, err)
		}
		a := accounts[0]
		if !a.Personal || a.Role != identity.RoleOwner || a.Name != "Ada" {
			t.Errorf("personal account = %+v, want personal, owner, named after the user", a)
		}
		if !regexp.MustCompile(`^ada-lovelace-[a-z0-9]{8}$`).MatchString(a.Slug) || !identity.ValidSlug(a.Slug) {
			t.Errorf("personal slug = %q, want ada-lovelace-XXXXXXXX", a.Slug)
		}
		members, _, err := env.Store.ListMembers(ctx, a.ID, allPage)
		if err != nil || len(members) != 1 || members[0].UserID != u.ID || members[0].Role != identity.RoleOwner {
			t.Errorf("members = %+v, %v; want the user as owner", members, err)
		}

		rows := env.Outbox(t)
		if len(rows) != 2 {
			t.Fatalf("outbox has %d rows, want 2", len(rows))
		}
		if rows[0].Type != identity.EventUserCreated || rows[0].Subject != u.ID {
			t.Errorf("first row = %s about %s, want %s about the user", rows[0].Type, rows[0].Subject, identity.EventUserCreated)
		}
		wantData(t, rows[0], map[string]any{"user_id": u.ID, "email": u.Email})
		if rows[1].Type != identity.EventAccountCreated || rows[1].Subject != a.ID {
			t.Errorf("second row = %s about %s, want %s about the account", rows[1].Type, rows[1].Subject, identity.EventAccountCreated)
		}
		wantData(t, rows[1], map[string]any{"account_id": a.ID, "name": "Ada", "slug": a.Slug, "personal": true, "owner_user_id": u.ID})
		for _, r := range rows {
			wantUnpublished(t, r, now)
		}
	})
}

func TestRegisterPersonalAccountNames(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		long := "a@" + strings.Repeat("d", 150) + ".io" // valid, and longer than an account name may be
		tests := []struct {
			email, display string
			wantName       string
			wantSlug       string
		}{
			{"grace@example.com", "", "grace@example.com", `^grace-[a-z0-9]{8}$`},
			{"Jean.Dupont+news@example.com", "Jean", "Jean", `^jean-dupont-news-[a-z0-9]{8}$`},
			{"___@example.com", "", "___@example.com", `^user-[a-z0-9]{8}$`},
			{strings.Repeat("x", 70) + "@example.com", "", strings.Repeat("x", 70) + "@example.com", `^x{54}-[a-z0-9]{8}$`},
			{long, "", long[:identity.NameMax], `^a-[a-z0-9]{8}$`},
		}
		for _, tt := range tests {
			u, err := env.Service.Register(ctx, identity.RegisterInput{Email: tt.email, Password: "12345678", DisplayName: tt.display})
			if err != nil {
				t.Errorf("Register(%q): %v", tt.email, err)
				continue
			}
			accounts, _, err := env.Store.ListAccounts(ctx, u.ID, allPage)
			if err != nil || len(accounts) != 1 {
				t.Fatalf("ListAccounts = %v, %v", accounts, err)
			}
			if accounts[0].Name != tt.wantName {
				t.Errorf("%s: personal account name = %q, want %q", tt.email, accounts[0].Name, tt.wantName)
			}
			if !regexp.MustCompile(tt.wantSlug).MatchString(accounts[0].Slug) || !identity.ValidSlug(accounts[0].Slug) {
				t.Errorf("%s: personal slug = %q, want %s", tt.email, accounts[0].Slug, tt.wantSlug)
			}
		}
	})
}

func TestRegisterTakenAddress(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		for _, email := range []string{"ada@example.com", "ADA@Example.Com", "  ada@example.com\t", " Ada@EXAMPLE.com "} {
			writesNothing(t, env, func() {
				_, err := env.Service.Register(ctx, identity.RegisterInput{Email: email, Password: "another password"})
				wantCode(t, err, identity.CodeConflict)
				if strings.Contains(errs.Code(err)+err.Error(), "ada@example.com") {
					t.Errorf("conflict %q names the address", err)
				}
			})
		}
		if n := env.Count(t, "users"); n != 1 {
			t.Errorf("users = %d, want 1", n)
		}
	})
}

func TestRegisterValidation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		tests := []struct {
			name string
			in   identity.RegisterInput
			want []errs.FieldError
		}{
			{"EmailRequired", identity.RegisterInput{Email: "", Password: "12345678"}, []errs.FieldError{field("email", "required")}},
			{"EmailBlank", identity.RegisterInput{Email: "   ", Password: "12345678"}, []errs.FieldError{field("email", "required")}},
			{"EmailNoAt", identity.RegisterInput{Email: "ada.example.com", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"EmailNoDomain", identity.RegisterInput{Email: "ada@", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"EmailNoLocal", identity.RegisterInput{Email: "@example.com", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"EmailDisplayForm", identity.RegisterInput{Email: "Ada <ada@example.com>", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"EmailTwoAddresses", identity.RegisterInput{Email: "a@b.co, c@d.co", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"EmailTooLong", identity.RegisterInput{Email: "a@" + strings.Repeat("d", 250) + ".io", Password: "12345678"}, []errs.FieldError{field("email", "invalid")}},
			{"PasswordEmpty", identity.RegisterInput{Email: "a@b.co", Password: ""}, []errs.FieldError{field("password", "too_short")}},
			{"PasswordSeven", identity.RegisterInput{Email: "a@b.co", Password: "1234567"}, []errs.FieldError{field("password", "too_short")}},
			{"PasswordSevenRunes", identity.RegisterInput{Email: "a@b.co", Password: "ééééééé"}, []errs.FieldError{field("password", "too_short")}},
			{"Password129", identity.RegisterInput{Email: "a@b.co", Password: strings.Repeat("p", 129)}, []errs.FieldError{field("password", "too_long")}},
			{"Password129Runes", identity.RegisterInput{Email: "a@b.co", Password: strings.Repeat("й", 129)}, []errs.FieldError{field("password", "too_long")}},
			{"DisplayName121", identity.RegisterInput{Email: "a@b.co", Password: "12345678", DisplayName: strings.Repeat("n", 121)}, []errs.FieldError{field("display_name", "too_long")}},
			{"Everything", identity.RegisterInput{Email: "nope", Password: "short", DisplayName: strings.Repeat("ü", 121)},
				[]errs.FieldError{field("email", "invalid"), field("password", "too_short"), field("display_name", "too_long")}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				writesNothing(t, env, func() {
					_, err := env.Service.Register(ctx, tt.in)
					wantCode(t, err, identity.CodeValidation)
					wantFields(t, err, tt.want...)
				})
			})
		}

		// The limits themselves are accepted.
		for i, in := range []identity.RegisterInput{
			{Email: "eight@b.co", Password: "12345678"},
			{Email: "runes@b.co", Password: "éééééééé"},
			{Email: "max@b.co", Password: strings.Repeat("й", 128), DisplayName: strings.Repeat("ü", 120)},
			{Email: "spaces@b.co", Password: "        "},
		} {
			if _, err := env.Service.Register(ctx, in); err != nil {
				t.Errorf("case %d: Register(%s) at the limits: %v", i, in.Email, err)
			}
		}
		if _, _, err := env.Service.Login(ctx, "max@b.co", strings.Repeat("й", 128)); err != nil {
			t.Errorf("login with a 128-rune password: %v", err)
		}
	})
}

func TestLogin(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{SessionTTL: 2 * time.Hour})
		u := env.Register(t, "ada@example.com")
		now := env.Clock.Now()

		tok, sess, err := env.Service.Login(ctx, "  ADA@example.com ", identitytest.Password)
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		if sess.UserID != u.ID || !sess.CreatedAt.Equal(now) || !sess.ExpiresAt.Equal(now.Add(2*time.Hour)) {
			t.Errorf("session = %+v, want user %s from %v for 2h", sess, u.ID, now)
		}
		p := env.Principal(t, tok, "")
		if p.User.ID != u.ID || p.SessionID != sess.ID || p.User.Email != "ada@example.com" || p.Account != nil {
			t.Errorf("principal = %+v", p)
		}

		// A wrong password and an unknown address get the same answer.
		_, _, errWrong := env.Service.Login(ctx, "ada@example.com", "wrong password")
		_, _, errUnknown := env.Service.Login(ctx, "nobody@example.com", identitytest.Password)
		_, _, errEmpty := env.Service.Login(ctx, "", "")
		for _, err := range []error{errWrong, errUnknown, errEmpty} {
			if !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("Login error = %v, want ErrUnauthorized", err)
			}
		}
		if errWrong.Error() != errUnknown.Error() {
			t.Errorf("wrong password %q and unknown address %q answer differently", errWrong, errUnknown)
		}
	})
}

// failedLogins reads the user's failure count and lock.
func failedLogins(t *testing.T, env *identitytest.Env, email string) (int, *time.Time) {
	t.Helper()
	var (
		n      int
		locked sql.NullTime
	)
	if err := env.DB.QueryRow(ctx, `SELECT failed_logins, locked_until FROM users WHERE email = $1`, email).Scan(&n, &locked); err != nil {
		t.Fatal(err)
	}
	if !locked.Valid {
		return n, nil
	}
	l := locked.Time.UTC()
	return n, &l
}

func wantLocked(t *testing.T, err error, retryAfter time.Duration) {
	t.Helper()
	wantCode(t, err, identity.CodeLocked)
	if e, _ := errs.As(err); e.RetryAfter != retryAfter {
		t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, retryAfter)
	}
}

func TestLockout(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const threshold = 5
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold, LockoutDuration: 15 * time.Minute})
		env.Register(t, "ada@example.com")
		login := func(password string) error {
			_, _, err := env.Service.Login(ctx, "ada@example.com", password)
			return err
		}

		for i := 1; i <= threshold; i++ {
			if err := login("wrong password"); !errors.Is(err, identity.ErrUnauthorized) {
				t.Fatalf("wrong password %d: %v, want ErrUnauthorized", i, err)
			}
		}
		start := env.Clock.Now()
		if _, until := failedLogins(t, env, "ada@example.com"); until == nil || !until.Equal(start.Add(15*time.Minute)) {
			t.Fatalf("locked_until = %v, want %v", until, start.Add(15*time.Minute))
		}

		// Locked: the right password is refused too, and a wrong one is
		// not counted.
		writesNothing(t, env, func() { wantLocked(t, login(identitytest.Password), 15*time.Minute) })
		wantLocked(t, login("wrong password"), 15*time.Minute)
		env.Clock.Advance(15*time.Minute - 1500*time.Millisecond)
		wantLocked(t, login(identitytest.Password), 1500*time.Millisecond)
		env.Clock.Advance(time.Second)
		wantLocked(t, login(identitytest.Password), time.Second) // never less than a second
		if n, _ := failedLogins(t, env, "ada@example.com"); n != 0 {
			t.Errorf("failed_logins while locked = %d, want 0", n)
		}

		// The lock expires: the right password works and clears it.
		env.Clock.Set(start.Add(15 * time.Minute))
		if err := login(identitytest.Password); err != nil {
			t.Fatalf("login when the lock expired: %v", err)
		}
		if n, until := failedLogins(t, env, "ada@example.com"); n != 0 || until != nil {
			t.Errorf("after a login: failed_logins %d, locked_until %v; want 0, null", n, until)
		}

		// A successful login resets the count: threshold-1 failures, a
		// success and threshold-1 failures again never lock.
		for round := 0; round < 2; round++ {
			for i := 1; i < threshold; i++ {
				if err := login("wrong password"); !errors.Is(err, identity.ErrUnauthorized) {
					t.Fatalf("round %d failure %d: %v", round, i, err)
				}
			}
			if err := login(identitytest.Password); err != nil {
				t.Fatalf("round %d: right password after %d failures: %v", round, threshold-1, err)
			}
		}

		// A lock that expired without a login: counting starts afresh.
		for i := 0; i < threshold; i++ {
			_ = login("wrong password")
		}
		wantLocked(t, login(identitytest.Password), 15*time.Minute)
		env.Clock.Advance(15 * time.Minute)
		if err := login("wrong password"); !errors.Is(err, identity.ErrUnauthorized) {
			t.Fatalf("first failure after the lock expired: %v, want ErrUnauthorized", err)
		}
		if err := login(identitytest.Password); err != nil {
			t.Fatalf("right password after one new failure: %v", err)
		}
	})
}

// TestLockoutAnswersAlike: failures are counted per submitted address, so
// a registered, an unknown and a disabled address lock after the same
// number of failures and answer every attempt with the same error; the
// lockout cannot tell which exist.
func TestLockoutAnswersAlike(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		const threshold = 3
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: threshold, LockoutDuration: 15 * time.Minute})
		env.Register(t, "ada@example.com")
		env.Register(t, "bob@example.com")
		env.Register(t, "off@example.com")
		if _, err := env.DB.Exec(ctx, `UPDATE users SET disabled_at = $1 WHERE email = 'off@example.com'`, env.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		// answers are the errors of threshold+1 wrong passwords, then the
		// right one, then a wrong one once the lock has expired.
		answers := func(email string) []error {
			start := env.Clock.Now()
			defer env.Clock.Set(start)
			var out []error
			for range threshold + 1 {
				_, _, err := env.Service.Login(ctx, email, "wrong password")
				out = append(out, err)
			}
			_, _, err := env.Service.Login(ctx, email, identitytest.Password)
			out = append(out, err)
			env.Clock.Advance(15 * time.Minute)
			_, _, err = env.Service.Login(ctx, email, "wrong password")
			return append(out, err)
		}
		want := answers("ada@example.com")
		for i, err := range want {
			switch {
			case i < threshold || i == len(want)-1:
				wantCode(t, err, identity.CodeUnauthorized)
			default:
				wantLocked(t, err, 15*time.Minute)
			}
		}
		for _, email := range []string{"nobody@example.com", " NoBody2@Example.com ", "off@example.com", "not an address"} {
			t.Run(strings.TrimSpace(email), func(t *testing.T) {
				got := answers(email)
				for i := range want {
					g, _ := errs.As(got[i])
					w, _ := errs.As(want[i])
					if !reflect.DeepEqual(g, w) {
						t.Errorf("attempt %d: %v, the registered address's answer %v", i+1, got[i], want[i])
					}
				}
			})
		}
		if n, until := failedLogins(t, env, "bob@example.com"); n != 0 || until != nil {
			t.Errorf("another user's count changed: %d, %v", n, until)
		}
		env.Login(t, "bob@example.com")
		var clear int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM login_failures WHERE address_digest LIKE '%example%'`).Scan(&clear); err != nil || clear != 0 {
			t.Errorf("login_failures keeps %d addresses in the clear (%v)", clear, err)
		}
	})
}

func TestDisabledUser(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		tok := env.Login(t, "ada@example.com")
		if _, err := env.DB.Exec(ctx, `UPDATE users SET disabled_at = $1`, env.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		_, _, err := env.Service.Login(ctx, "ada@example.com", identitytest.Password)
		if !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("disabled user's login: %v, want ErrUnauthorized", err)
		}
		if _, err := env.Service.Authenticate(ctx, tok, ""); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("disabled user's session: %v, want ErrUnauthorized", err)
		}
	})
}

func TestSessions(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{SessionTTL: time.Hour})
		env.Register(t, "ada@example.com")
		tok1 := env.Login(t, "ada@example.com")
		tok2 := env.Login(t, "ada@example.com")
		p1 := env.Principal(t, tok1, "")
		p2 := env.Principal(t, tok2, "")
		if p1.SessionID == p2.SessionID {
			t.Fatal("two logins share a session")
		}

		t.Run("LogoutEndsExactlyThatSession", func(t *testing.T) {
			if err := env.Service.Logout(ctx, p1); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Service.Authenticate(ctx, tok1, ""); !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("token after logout: %v, want ErrUnauthorized", err)
			}
			env.Principal(t, tok2, "")
			if err := env.Service.Logout(ctx, p1); err != nil {
				t.Errorf("second logout: %v, want a no-op", err)
			}
		})

		t.Run("Expiry", func(t *testing.T) {
			env.Clock.Advance(time.Hour - time.Second)
			env.Principal(t, tok2, "")
			env.Clock.Advance(time.Second)
			if _, err := env.Service.Authenticate(ctx, tok2, ""); !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("expired session: %v, want ErrUnauthorized", err)
			}
		})

		t.Run("RefusedTokens", func(t *testing.T) {
			env.Clock.Advance(time.Minute)
			tok := env.Login(t, "ada@example.com")
			p := env.Principal(t, tok, "")
			other := identity.NewService(env.Store, identity.NewHasher(identitytest.CheapHash, 1), env.Ring, identity.Options{Issuer: "http://elsewhere", Now: env.Clock.Now})
			parts := strings.Split(tok, ".")
			sign := func(c identity.Claims) string {
				s, err := env.Ring.Sign(c)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			claims := func(sub, sid string) identity.Claims {
				c := identity.Claims{SID: sid}
				c.Issuer, c.Subject = identitytest.Issuer, sub
				c.IssuedAt = jwtTime(env.Clock.Now())
				c.ExpiresAt = jwtTime(env.Clock.Now().Add(time.Hour))
				return c
			}
			stranger := env.Register(t, "stranger@example.com")
			noExp := claims(p.User.ID, p.SessionID)
			noExp.ExpiresAt = nil
			expired := claims(p.User.ID, p.SessionID)
			expired.ExpiresAt = jwtTime(time.Now().Add(-time.Minute))
			tests := []struct {
				name, token string
				svc         *identity.Service
			}{
				{"Empty", "", env.Service},
				{"Garbage", "not.a.token", env.Service},
				{"TamperedPayload", parts[0] + "." + parts[1] + "x." + parts[2], env.Service},
				{"TamperedSignature", parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])), env.Service},
				{"AlgNone", forgedToken(t, "none", parts[1], identity.JWK{}), env.Service},
				{"HS256WithPublicKey", forgedToken(t, "HS256", parts[1], env.Ring.JWKS()[0]), env.Service},
				{"WrongIssuer", tok, other},
				{"UnknownSession", sign(claims(p.User.ID, "6f1c1f7e-3c0e-4a4c-9a49-0a6f3e1b2c3d")), env.Service},
				{"AnotherUsersSession", sign(claims(stranger.ID, p.SessionID)), env.Service},
				{"MalformedSubject", sign(claims("ada", p.SessionID)), env.Service},
				{"NoExpiry", sign(noExp), env.Service},
				{"ExpiredClaim", sign(expired), env.Service},
			}
			for _, tt := range tests {
				if _, err := tt.svc.Authenticate(ctx, tt.token, ""); !errors.Is(err, identity.ErrUnauthorized) {
					t.Errorf("%s: %v, want ErrUnauthorized", tt.name, err)
				}
			}
			env.Principal(t, sign(claims(p.User.ID, p.SessionID)), "") // the control case verifies
		})
	})
}

// TestRehashOnLogin: a password hashed with older parameters is rehashed
// with the current ones at the next successful login, and still works.
func TestRehashOnLogin(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		hashOf := func() string {
			var h string
			if err := env.DB.QueryRow(ctx, `SELECT password_hash FROM users WHERE email = 'ada@example.com'`).Scan(&h); err != nil {
				t.Fatal(err)
			}
			return h
		}
		old := hashOf()
		stronger := identity.HashParams{MemoryKiB: 128, Passes: 2, Threads: 1}
		svc := identity.NewService(env.Store, identity.NewHasher(stronger, 1), env.Ring, env.Options)
		if _, _, err := svc.Login(ctx, "ada@example.com", "wrong password"); !errors.Is(err, identity.ErrUnauthorized) {
			t.Fatalf("wrong password: %v", err)
		}
		if hashOf() != old {
			t.Fatal("a failed login replaced the hash")
		}
		if _, _, err := svc.Login(ctx, "ada@example.com", identitytest.Password); err != nil {
			t.Fatal(err)
		}
		if h := hashOf(); !strings.HasPrefix(h, "$argon2id$v=19$m=128,t=2,p=1$") {
			t.Errorf("hash after login = %.40s…, want the current parameters", h)
		}
		if _, _, err := svc.Login(ctx, "ada@example.com", identitytest.Password); err != nil {
			t.Errorf("login after the rehash: %v", err)
		}
		if _, _, err := env.Service.Login(ctx, "ada@example.com", identitytest.Password); err != nil {
			t.Errorf("login through the old parameters after the rehash: %v", err)
		}
	})
}
