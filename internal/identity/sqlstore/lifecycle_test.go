package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func TestRegistrationQueuesVerification(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		u := env.Register(t, "Ada@Example.com")
		if u.EmailVerifiedAt != nil {
			t.Errorf("a new user is verified: %v", u.EmailVerifiedAt)
		}
		mails := env.Mail(t, "ada@example.com", identity.TemplateVerifyEmail)
		if len(mails) != 1 || mails[0]["link"] == "" {
			t.Fatalf("verify_email mails = %v, want one with a link", mails)
		}
		var clear int
		if err := env.DB.QueryRow(ctx, `SELECT count(*) FROM mail_outbox WHERE data_sealed LIKE '%verify%'`).Scan(&clear); err == nil && clear != 0 {
			t.Errorf("%d mail rows hold the link in the clear", clear)
		}
		p := env.Principal(t, env.Login(t, "ada@example.com"), "")
		if p.User.EmailVerifiedAt != nil {
			t.Error("principal verified before the link was used")
		}
		got := env.Verify(t, "ada@example.com")
		if got.EmailVerifiedAt == nil || !got.EmailVerifiedAt.Equal(env.Clock.Now()) {
			t.Errorf("verified at %v, want %v", got.EmailVerifiedAt, env.Clock.Now())
		}
		r := lastEvent(t, env, identity.EventUserEmailVerified, u.ID)
		wantData(t, r, map[string]any{"user_id": u.ID, "email": "ada@example.com", "verified_at": env.Clock.Now().UTC().Format(time.RFC3339Nano)})
		if p := env.Principal(t, env.Login(t, "ada@example.com"), ""); p.User.EmailVerifiedAt == nil {
			t.Error("the principal does not carry the verification")
		}
	})
}

func TestVerificationTokenOutcomes(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		token := env.LinkToken(t, "ada@example.com", identity.TemplateVerifyEmail)
		tests := []struct {
			name  string
			token string
			after time.Duration
			code  string
		}{
			{"UnknownIsNotFound", "no-such-token", 0, identity.CodeNotFound},
			{"BlankIsInvalid", "  ", 0, identity.CodeValidation},
			{"ExpiredAtTwentyFourHours", token, identity.VerificationTTL, identity.CodeTokenExpired},
			{"ValidOneSecondBefore", token, identity.VerificationTTL - time.Second, ""},
			{"UsedOnce", token, 0, identity.CodeTokenUsed},
		}
		start := env.Clock.Now()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				env.Clock.Set(start.Add(tt.after))
				defer env.Clock.Set(start)
				_, err := env.Service.VerifyEmail(ctx, tt.token)
				if tt.code == "" {
					if err != nil {
						t.Fatalf("verify: %v", err)
					}
					return
				}
				wantCode(t, err, tt.code)
			})
		}
	})
}

func TestResendVerificationLimit(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		p := env.Principal(t, env.Login(t, "ada@example.com"), "")
		first := env.LinkToken(t, "ada@example.com", identity.TemplateVerifyEmail)
		err := env.Service.ResendVerification(ctx, p)
		wantCode(t, err, identity.CodeRateLimited)
		if e, ok := errsAs(err); !ok || e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
			t.Errorf("Retry-After = %v, want within a minute", err)
		}
		env.Clock.Advance(time.Minute)
		codes, unexpected := race(20, func(int) error { return env.Service.ResendVerification(ctx, p) })
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[identity.CodeRateLimited] != 19 {
			t.Errorf("concurrent resends = %v, want 1 sent and 19 rate_limited", codes)
		}
		if n := len(env.Mail(t, "ada@example.com", identity.TemplateVerifyEmail)); n != 2 {
			t.Errorf("verify_email mails = %d, want 2", n)
		}
		// The earlier link still works.
		if _, err := env.Service.VerifyEmail(ctx, first); err != nil {
			t.Fatalf("first link after a resend: %v", err)
		}
		p = env.Principal(t, env.Login(t, "ada@example.com"), "")
		env.Clock.Advance(time.Minute)
		wantCode(t, env.Service.ResendVerification(ctx, p), identity.CodeConflict)
	})
}

func TestRaceTokenConsumedOnce(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		verify := env.LinkToken(t, "ada@example.com", identity.TemplateVerifyEmail)
		if err := env.Service.RequestPasswordReset(ctx, "ada@example.com"); err != nil {
			t.Fatal(err)
		}
		reset := env.LinkToken(t, "ada@example.com", identity.TemplatePasswordReset)
		tests := []struct {
			name string
			use  func() error
		}{
			{"Verification", func() error { _, err := env.Service.VerifyEmail(ctx, verify); return err }},
			{"PasswordReset", func() error { return env.Service.ConfirmPasswordReset(ctx, reset, "another horse battery", "") }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				codes, unexpected := race(50, func(int) error { return tt.use() })
				wantNoUnexpected(t, unexpected)
				if codes[""] != 1 || codes[identity.CodeTokenUsed] != 49 {
					t.Errorf("answers = %v, want exactly one success and 49 token_used", codes)
				}
			})
		}
		if n := len(eventsOf(t, env, identity.EventUserEmailVerified)); n != 1 {
			t.Errorf("email_verified events = %d, want 1", n)
		}
	})
}

func TestPasswordResetEndsEverySession(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 2})
		ada := env.User(t, "ada@example.com")
		second := env.Login(t, "ada@example.com")
		// Lock the user with wrong passwords.
		for range 2 {
			_, _, _ = env.Service.Login(ctx, "ada@example.com", "wrong password")
		}
		if _, _, err := env.Service.Login(ctx, "ada@example.com", identitytest.Password); codeOf(err) != identity.CodeLocked {
			t.Fatalf("login before the reset: %v, want locked", err)
		}
		before := env.Counts(t)
		if err := env.Service.RequestPasswordReset(ctx, "nobody@example.com"); err != nil {
			t.Fatal(err)
		}
		if after := env.Counts(t); after["mail_outbox"] != before["mail_outbox"] || after["user_tokens"] != before["user_tokens"] {
			t.Errorf("an unknown address wrote %v, before %v", after, before)
		}
		if err := env.Service.RequestPasswordReset(ctx, " ADA@example.com "); err != nil {
			t.Fatal(err)
		}
		token := env.LinkToken(t, "ada@example.com", identity.TemplatePasswordReset)
		wantCode(t, env.Service.ConfirmPasswordReset(ctx, token, "short", ""), identity.CodeValidation)
		if err := env.Service.ConfirmPasswordReset(ctx, token, "another horse battery", ""); err != nil {
			t.Fatalf("confirm: %v", err)
		}
		for _, tok := range []string{second} {
			if _, err := env.Service.Authenticate(ctx, tok, ""); !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("a session survived the reset: %v", err)
			}
		}
		if _, err := env.Store.Authenticate(ctx, ada.SessionID, ada.User.ID, ""); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("the first session survived the reset: %v", err)
		}
		revoked := eventsOf(t, env, identity.EventSessionRevoked)
		if len(revoked) != 2 {
			t.Fatalf("session.revoked events = %d, want 2", len(revoked))
		}
		for _, r := range revoked {
			if r.Data["reason"] != identity.RevokedPasswordReset || r.Data["user_id"] != ada.User.ID || r.Subject != ada.User.ID {
				t.Errorf("event = %+v", r)
			}
		}
		// The lockout is cleared: the new password signs in at once.
		if _, _, err := env.Service.Login(ctx, "ada@example.com", "another horse battery"); err != nil {
			t.Errorf("login after the reset: %v", err)
		}
	})
}

func TestEmailChange(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		ada := env.User(t, "ada@example.com")
		env.User(t, "taken@example.com")
		wantCode(t, env.Service.RequestEmailChange(ctx, ada, "new@example.com", "wrong password"), identity.CodeInvalidCredentials)
		if err := env.Service.RequestEmailChange(ctx, ada, "taken@example.com", identitytest.Password); err != nil {
			t.Fatalf("a taken address: %v, want the same answer", err)
		}
		if n := len(env.Mail(t, "taken@example.com", identity.TemplateEmailChangeConfirm)); n != 0 {
			t.Errorf("a taken address got %d confirmation mails", n)
		}
		if err := env.Service.RequestEmailChange(ctx, ada, "New@Example.com", identitytest.Password); err != nil {
			t.Fatal(err)
		}
		token := env.LinkToken(t, "new@example.com", identity.TemplateEmailChangeConfirm)
		u, err := env.Service.ConfirmEmailChange(ctx, token)
		if err != nil {
			t.Fatalf("confirm: %v", err)
		}
		if u.Email != "new@example.com" || u.EmailVerifiedAt == nil {
			t.Errorf("user = %+v, want the new address, verified", u)
		}
		notice := env.Mail(t, "ada@example.com", identity.TemplateEmailChangedNotice)
		if len(notice) != 1 || notice[0]["new_email"] != "new@example.com" {
			t.Errorf("notices to the old address = %v", notice)
		}
		if _, err := env.Store.Authenticate(ctx, ada.SessionID, ada.User.ID, ""); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("a session survived the change: %v", err)
		}
		r := lastEvent(t, env, identity.EventSessionRevoked, ada.User.ID)
		wantData(t, r, map[string]any{"session_id": ada.SessionID, "user_id": ada.User.ID, "reason": identity.RevokedEmailChange})
		_, err = env.Service.ConfirmEmailChange(ctx, token)
		wantCode(t, err, identity.CodeTokenUsed)
		if _, _, err := env.Service.Login(ctx, "new@example.com", identitytest.Password); err != nil {
			t.Errorf("login at the new address: %v", err)
		}

		// An address taken between the request and the confirmation: 409,
		// and nothing changes.
		p := env.Principal(t, env.Login(t, "new@example.com"), "")
		if err := env.Service.RequestEmailChange(ctx, p, "late@example.com", identitytest.Password); err != nil {
			t.Fatal(err)
		}
		late := env.LinkToken(t, "late@example.com", identity.TemplateEmailChangeConfirm)
		env.Register(t, "late@example.com")
		writesNothing(t, env, func() {
			_, err := env.Service.ConfirmEmailChange(ctx, late)
			wantCode(t, err, identity.CodeConflict)
		})
	})
}

func TestInvitationNeedsVerifiedInvitee(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		owner := env.Team(t, env.User(t, "owner@example.com"), "Acme Corp")
		env.Register(t, "joiner@example.com")
		joiner := env.Principal(t, env.Login(t, "joiner@example.com"), "")
		other := env.User(t, "other@example.com")
		inv, err := env.Service.Invite(ctx, owner, "Joiner@Example.com", identity.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		mails := env.Mail(t, "joiner@example.com", identity.TemplateInvitation)
		if len(mails) != 1 || mails[0]["account_name"] != "Acme Corp" || mails[0]["inviter_email"] != "owner@example.com" || mails[0]["link"] == "" {
			t.Errorf("invitation mails = %v", mails)
		}
		writesNothing(t, env, func() {
			_, err := env.Service.AcceptInvitation(ctx, joiner, inv.Token)
			wantCode(t, err, identity.CodeEmailNotVerified)
			_, err = env.Service.AcceptInvitation(ctx, other, inv.Token)
			wantCode(t, err, identity.CodeInvitationEmailMismatch)
		})
		env.Verify(t, "joiner@example.com")
		if _, err := env.Service.AcceptInvitation(ctx, joiner, inv.Token); err != nil {
			t.Fatalf("accept once verified: %v", err)
		}
	})
}

func codeOf(err error) string {
	if e, ok := errsAs(err); ok {
		return e.Code
	}
	return ""
}
