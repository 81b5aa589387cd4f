package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestMailLimits: mail sent on a caller's behalf is bounded per recipient
// address and per user causing it. Past a limit every request is answered
// as usual and nothing more is sent; the window's end allows more.
func TestMailLimits(t *testing.T) {
	const perAddress, perUser = 3, 4
	tests := []struct {
		name string
		// send makes request i (of perAddress+2) and returns the address
		// and template whose mails count.
		send func(t *testing.T, env *identitytest.Env, i int) (string, string)
		want int // mails queued by perAddress+2 requests
		// after is how many more one request queues once the window ends.
		after int
	}{
		{"PasswordResetPerAddress", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			if i == 0 {
				env.Register(t, "ada@example.com")
			}
			if err := env.Service.RequestPasswordReset(ctx, "Ada@Example.com"); err != nil {
				t.Fatalf("reset %d: %v, want the usual answer", i, err)
			}
			return "ada@example.com", identity.TemplatePasswordReset
		}, perAddress, 1},
		{"VerificationResendPerAddress", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			if i == 0 {
				env.Register(t, "ada@example.com")
				env.Clock.Advance(identity.VerificationResendGap)
			}
			p := env.Principal(t, env.Login(t, "ada@example.com"), "")
			if err := env.Service.ResendVerification(ctx, p); err != nil {
				t.Fatalf("resend %d: %v, want the usual answer", i, err)
			}
			env.Clock.Advance(identity.VerificationResendGap)
			return "ada@example.com", identity.TemplateVerifyEmail
		}, 1 + perAddress, 1}, // the registration's mail is not on a caller's behalf
		{"EmailChangePerAddress", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			p := env.User(t, fmt.Sprintf("user%d@example.com", i))
			if err := env.Service.RequestEmailChange(ctx, p, "victim@example.com", identitytest.Password); err != nil {
				t.Fatalf("change %d: %v, want the usual answer", i, err)
			}
			return "victim@example.com", identity.TemplateEmailChangeConfirm
		}, perAddress, 1},
		{"EmailChangePerUser", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			if i == 0 {
				env.User(t, "ada@example.com")
			}
			p := env.Principal(t, env.Login(t, "ada@example.com"), "")
			if err := env.Service.RequestEmailChange(ctx, p, fmt.Sprintf("new%d@example.com", i), identitytest.Password); err != nil {
				t.Fatalf("change %d: %v, want the usual answer", i, err)
			}
			return "", identity.TemplateEmailChangeConfirm
		}, perUser, 1},
		{"InvitationPerAddress", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			owner := env.Team(t, env.User(t, fmt.Sprintf("owner%d@example.com", i)), fmt.Sprintf("Team %d", i))
			inv, err := env.Service.Invite(ctx, owner, "victim@example.com", identity.RoleMember)
			if err != nil || inv.Token == "" {
				t.Fatalf("invite %d: %+v, %v; want the invitation and its token", i, inv, err)
			}
			return "victim@example.com", identity.TemplateInvitation
		}, perAddress, 1},
		{"InvitationPerInviter", func(t *testing.T, env *identitytest.Env, i int) (string, string) {
			if i == 0 {
				env.Team(t, env.User(t, "owner@example.com"), "Acme")
			}
			owner := env.Principal(t, env.Login(t, "owner@example.com"), "")
			accounts, _, err := env.Store.ListAccounts(ctx, owner.User.ID, identity.PageRequest{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range accounts {
				if !a.Personal {
					owner = env.For(t, owner, a.ID)
				}
			}
			inv, err := env.Service.Invite(ctx, owner, fmt.Sprintf("someone%d@example.com", i), identity.RoleMember)
			if err != nil {
				t.Fatalf("invite %d: %v", i, err)
			}
			// A resend is an invitation mail too.
			if _, err := env.Service.ResendInvitation(ctx, owner, inv.ID); err != nil {
				t.Fatalf("resend %d: %v", i, err)
			}
			return "", identity.TemplateInvitation
		}, perUser, 2},
	}
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				env := identitytest.New(t, engine, identitytest.Config{MailPerAddress: perAddress, MailPerUser: perUser})
				count := func(address, template string) int {
					if address != "" {
						return len(env.Mail(t, address, template))
					}
					var n int
					if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM mail_outbox WHERE template = $1`, template).Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n
				}
				var address, template string
				for i := range perAddress + 2 {
					address, template = tt.send(t, env, i)
				}
				if got := count(address, template); got != tt.want {
					t.Errorf("mails = %d after %d requests, want %d", got, perAddress+2, tt.want)
				}
				env.Clock.Advance(identity.DefaultMailWindow)
				tt.send(t, env, perAddress+2)
				if got := count(address, template); got != tt.want+tt.after {
					t.Errorf("mails = %d after the window, want %d", got, tt.want+tt.after)
				}
			})
		}
	})
}

// TestRaceMailLimit: of concurrent resets of one address, exactly the
// limit send a mail and write a token; all get the same answer.
func TestRaceMailLimit(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		u := env.Register(t, "ada@example.com")
		codes, unexpected := race(20, func(int) error { return env.Service.RequestPasswordReset(ctx, "ada@example.com") })
		wantNoUnexpected(t, unexpected)
		if codes[""] != 20 {
			t.Errorf("answers = %v, want 20 alike", codes)
		}
		if n := len(env.Mail(t, "ada@example.com", identity.TemplatePasswordReset)); n != identity.DefaultMailPerAddress {
			t.Errorf("reset mails = %d, want %d", n, identity.DefaultMailPerAddress)
		}
		var tokens int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM user_tokens WHERE user_id = $1 AND purpose = 'password_reset'`, u.ID).Scan(&tokens); err != nil {
			t.Fatal(err)
		}
		if tokens != identity.DefaultMailPerAddress {
			t.Errorf("reset tokens = %d, want %d (none without its mail)", tokens, identity.DefaultMailPerAddress)
		}
	})
}

// TestPurgeSpent: the hourly purge deletes the mail windows that have
// ended, the address counters that count nothing and sent mail past
// SentMailKept, and keeps everything that still changes an answer.
func TestPurgeSpent(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		now := env.Clock.Now()
		ts := func(d time.Duration) time.Time { return sqldb.Timestamp(now.Add(d)) }
		const (
			quota   = `INSERT INTO mail_quota (key_digest, window_start, sent) VALUES ($1, $2, 3)`
			failure = `INSERT INTO login_failures (address_digest, failed_logins, locked_until, updated_at) VALUES ($1, $2, $3, $3)`
			mail    = `INSERT INTO mail_outbox (id, template, recipient, created_at, next_attempt_at, sent_at) VALUES ($1, 'x', 'a@example.com', $2, $2, $3)`
		)
		old := ts(-sqlstore.SentMailKept - time.Hour)
		rows := []struct {
			sql  string
			args []any
		}{
			{quota, []any{"ended", ts(-identity.DefaultMailWindow)}},
			{quota, []any{"open", ts(-time.Minute)}},
			{failure, []any{"spent", 0, ts(-time.Minute)}},
			{failure, []any{"locked", 0, ts(time.Minute)}},
			{failure, []any{"counting", 2, ts(-time.Minute)}},
			{mail, []any{"00000000-0000-0000-0000-000000000001", old, old}},
			{mail, []any{"00000000-0000-0000-0000-000000000002", ts(-time.Hour), ts(-time.Hour)}},
			{mail, []any{"00000000-0000-0000-0000-000000000003", old, nil}},
		}
		for _, r := range rows {
			if _, err := env.DB.Exec(ctx, r.sql, r.args...); err != nil {
				t.Fatalf("%s %v: %v", r.sql, r.args, err)
			}
		}
		n, err := env.Store.PurgeSpent(ctx, identity.DefaultMailWindow)
		if err != nil || n != 3 {
			t.Fatalf("PurgeSpent = %d, %v; want 3 rows (an ended window, a spent counter, an old sent mail)", n, err)
		}
		for _, c := range []struct {
			table, key, value string
		}{
			{"mail_quota", "key_digest", "open"},
			{"login_failures", "address_digest", "locked"},
			{"login_failures", "address_digest", "counting"},
			{"mail_outbox", "id", "00000000-0000-0000-0000-000000000002"},
			{"mail_outbox", "id", "00000000-0000-0000-0000-000000000003"},
		} {
			var count int
			if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM `+c.table+` WHERE `+c.key+` = $1`, c.value).Scan(&count); err != nil || count != 1 {
				t.Errorf("%s %s: %d rows, %v; want it kept", c.table, c.value, count, err)
			}
		}
	})
}
