package sqlstore_test

import (
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// credentialChanges are the changes that end what the old password or
// address proved: each makes it as p and returns the password that signs
// in afterwards.
var credentialChanges = []struct {
	name   string
	change func(t *testing.T, env *identitytest.Env, p identity.Principal) string
}{
	{"EmailChange", func(t *testing.T, env *identitytest.Env, p identity.Principal) string {
		if err := env.Service.RequestEmailChange(ctx, p, "new@example.com", identitytest.Password); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.ConfirmEmailChange(ctx, env.LinkToken(t, "new@example.com", identity.TemplateEmailChangeConfirm)); err != nil {
			t.Fatalf("confirm the change: %v", err)
		}
		return identitytest.Password
	}},
	{"PasswordChange", func(t *testing.T, env *identitytest.Env, p identity.Principal) string {
		if err := env.Service.ChangePassword(ctx, p, identitytest.Password, newPassword); err != nil {
			t.Fatalf("change the password: %v", err)
		}
		if got := env.Mail(t, p.User.Email, identity.TemplatePasswordChangedNotice); len(got) != 1 || len(got[0]) != 0 {
			t.Errorf("password_changed_notice mails after a change = %v, want one with no data", got)
		}
		return newPassword
	}},
	{"NewerResetCompleted", func(t *testing.T, env *identitytest.Env, p identity.Principal) string {
		env.Clock.Advance(time.Second) // LinkToken takes the newest mail
		if err := env.Service.RequestPasswordReset(ctx, p.User.Email); err != nil {
			t.Fatal(err)
		}
		if err := env.Service.ConfirmPasswordReset(ctx, env.LinkToken(t, p.User.Email, identity.TemplatePasswordReset), newPassword, ""); err != nil {
			t.Fatalf("complete the newer reset: %v", err)
		}
		if got := env.Mail(t, p.User.Email, identity.TemplatePasswordChangedNotice); len(got) != 1 {
			t.Errorf("password_changed_notice mails after a reset = %d, want 1", len(got))
		}
		return newPassword
	}},
}

// TestCredentialChangeEndsOutstandingLinks: a change of the address, a
// change of the password and a completed reset each end every link the
// user had outstanding: an older reset link (which, sent to the old
// address, would let the old mailbox choose the password of the account
// now at the new one), the verification link and an email change link.
func TestCredentialChangeEndsOutstandingLinks(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range credentialChanges {
			t.Run(tt.name, func(t *testing.T) {
				env := identitytest.New(t, engine, identitytest.Config{})
				env.Register(t, "ada@example.com") // unverified: its verification link is outstanding
				p := env.Principal(t, env.Login(t, "ada@example.com"), "")
				verify := env.LinkToken(t, "ada@example.com", identity.TemplateVerifyEmail)
				if err := env.Service.RequestPasswordReset(ctx, "ada@example.com"); err != nil {
					t.Fatal(err)
				}
				reset := env.LinkToken(t, "ada@example.com", identity.TemplatePasswordReset)
				if err := env.Service.RequestEmailChange(ctx, p, "elsewhere@example.com", identitytest.Password); err != nil {
					t.Fatal(err)
				}
				change := env.LinkToken(t, "elsewhere@example.com", identity.TemplateEmailChangeConfirm)

				password := tt.change(t, env, p)

				const stolen = "the old mailbox's choice"
				writesNothing(t, env, func() {
					wantCode(t, env.Service.ConfirmPasswordReset(ctx, reset, stolen, ""), identity.CodeTokenUsed)
				})
				_, err := env.Service.VerifyEmail(ctx, verify)
				wantCode(t, err, identity.CodeTokenUsed)
				_, err = env.Service.ConfirmEmailChange(ctx, change)
				wantCode(t, err, identity.CodeTokenUsed)

				var open int
				if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM user_tokens WHERE user_id = $1 AND used_at IS NULL`, p.User.ID).Scan(&open); err != nil {
					t.Fatal(err)
				}
				if open != 0 {
					t.Errorf("%d tokens of the user are still open", open)
				}
				var email string
				if err := env.DB.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`, p.User.ID).Scan(&email); err != nil {
					t.Fatal(err)
				}
				if _, _, err := env.Service.Login(ctx, email, stolen); codeOf(err) != identity.CodeUnauthorized {
					t.Errorf("sign-in with the old mailbox's password: %v, want unauthorized", err)
				}
				if _, _, err := env.Service.Login(ctx, email, password); err != nil {
					t.Errorf("sign-in with the account's password: %v", err)
				}
			})
		}
	})
}

// TestCredentialChangeRevokesOIDCTokens: the same changes revoke every
// token relying parties hold for the user, and end an open MFA sign-in
// challenge, since the sessions that made them may be an intruder's.
func TestCredentialChangeRevokesOIDCTokens(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		for _, tt := range credentialChanges {
			t.Run(tt.name, func(t *testing.T) {
				env, c, admin, digest := oidcGrant(t, engine)
				req, _, _, err := env.Store.OIDCAuthRequestByCode(ctx, digest)
				if err != nil {
					t.Fatal(err)
				}
				access, refresh, refreshDigest := codeTokens(c, admin, req)
				if err := env.Store.RedeemOIDCCode(ctx, req.ID, access, refresh, refreshDigest); err != nil {
					t.Fatal(err)
				}
				if n := liveTokens(t, env, req.ID); n != 2 {
					t.Fatalf("live OIDC tokens before = %d, want 2", n)
				}
				_, challenge := identity.NewSecret()
				if _, err := env.Store.CreateChallenge(ctx, admin.User.ID, challenge, identity.MFAChallengeTTL); err != nil {
					t.Fatal(err)
				}

				tt.change(t, env, admin)

				if n := liveTokens(t, env, req.ID); n != 0 {
					t.Errorf("live OIDC tokens after = %d, want 0", n)
				}
				if _, err := env.Store.ChallengeUser(ctx, challenge); err != identity.ErrChallengeUsed {
					t.Errorf("challenge after the change: %v, want ErrChallengeUsed", err)
				}
			})
		}
	})
}
