package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
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
