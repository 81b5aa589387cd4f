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

const newPassword = "another horse battery"

// resetToken asks for a reset of email and returns the mailed token. The
// clock moves a second first, so the newest mail is this one.
func resetToken(t *testing.T, env *identitytest.Env, email string) string {
	t.Helper()
	env.Clock.Advance(time.Second)
	if err := env.Service.RequestPasswordReset(ctx, email); err != nil {
		t.Fatal(err)
	}
	return env.LinkToken(t, email, identity.TemplatePasswordReset)
}

// TestPasswordResetWithMFA: a user with MFA resets only with a second
// factor (identity-lifecycle.md §2); a refused confirm leaves the token
// usable and wrong codes count toward the lockout.
func TestPasswordResetWithMFA(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 3})
		p := env.User(t, "ada@example.com")
		en := enableMFA(t, env, p)
		token := resetToken(t, env, "ada@example.com")
		now := func() string { return codeAt(t, en.Secret, env.Clock.Now()) }

		tests := []struct {
			name   string
			code   func() string
			want   string
			failed int // failed_logins afterwards
		}{
			{"ErrMFARequiredWithoutCode", func() string { return "" }, identity.CodeMFARequired, 0},
			{"ErrMFARequiredBlankCode", func() string { return "  " }, identity.CodeMFARequired, 0},
			{"ErrWrongTOTPCounted", func() string { return "abcdef" }, identity.CodeInvalidCode, 1},
			{"ErrUnknownRecoveryCodeCounted", func() string { return "abcde-fghjk" }, identity.CodeInvalidCode, 2},
			{"ErrReplayedCode", func() string {
				code := now()
				mfaLogin(t, env, "ada@example.com", code) // spends the step, and clears the count
				return code
			}, identity.CodeInvalidCode, 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code := tt.code()
				writesNothing(t, env, func() {
					wantCode(t, env.Service.ConfirmPasswordReset(ctx, token, newPassword, code), tt.want)
				})
				if got, _ := failedLogins(t, env, "ada@example.com"); got != tt.failed {
					t.Errorf("failed_logins = %d, want %d", got, tt.failed)
				}
			})
		}

		t.Run("OKWithTOTP", func(t *testing.T) {
			open := challenge(t, env, "ada@example.com") // proven by the old password
			env.Clock.Advance(30 * time.Second)
			before := len(eventsOf(t, env, identity.EventSessionRevoked))
			if err := env.Service.ConfirmPasswordReset(ctx, token, newPassword, now()); err != nil {
				t.Fatalf("confirm with a valid code: %v", err)
			}
			if _, err := env.Store.Authenticate(ctx, p.SessionID, p.User.ID, ""); !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("a session survived the reset: %v", err)
			}
			if got := len(eventsOf(t, env, identity.EventSessionRevoked)) - before; got < 1 {
				t.Errorf("session.revoked events = %d, want at least 1", got)
			}
			if got, _ := failedLogins(t, env, "ada@example.com"); got != 0 {
				t.Errorf("failed_logins = %d after the reset, want 0", got)
			}
			wantCode(t, env.Service.ConfirmPasswordReset(ctx, token, newPassword, now()), identity.CodeTokenUsed)
			env.Clock.Advance(30 * time.Second)
			_, _, err := env.Service.LoginMFA(ctx, open, now())
			wantCode(t, err, identity.CodeTokenUsed) // the reset ended the challenge too
			// MFA stays on: the new password leads to the second step.
			_, _, err = env.Service.Login(ctx, "ada@example.com", newPassword)
			var mr *identity.MFARequiredError
			if !errors.As(err, &mr) {
				t.Errorf("login after the reset = %v, want mfa_required", err)
			}
		})

		t.Run("OKRecoveryCodeOnce", func(t *testing.T) {
			first := resetToken(t, env, "ada@example.com")
			if err := env.Service.ConfirmPasswordReset(ctx, first, identitytest.Password, en.RecoveryCodes[4]); err != nil {
				t.Fatalf("confirm with a recovery code: %v", err)
			}
			second := resetToken(t, env, "ada@example.com")
			wantCode(t, env.Service.ConfirmPasswordReset(ctx, second, newPassword, en.RecoveryCodes[4]), identity.CodeInvalidCode)
		})

		t.Run("ErrLockedEvenWithTheRightCode", func(t *testing.T) {
			tok := resetToken(t, env, "ada@example.com")
			for range 2 {
				wantCode(t, env.Service.ConfirmPasswordReset(ctx, tok, newPassword, "abcdef"), identity.CodeInvalidCode)
			}
			// The third failure reached the threshold of 3 (one is left
			// from OKRecoveryCodeOnce's refused replay).
			env.Clock.Advance(30 * time.Second)
			wantCode(t, env.Service.ConfirmPasswordReset(ctx, tok, newPassword, now()), identity.CodeLocked)
			env.Clock.Advance(env.Options.LockoutDuration + time.Second)
			if err := env.Service.ConfirmPasswordReset(ctx, tok, newPassword, now()); err != nil {
				t.Fatalf("confirm once the lockout ended: %v", err)
			}
		})

		t.Run("OKCodeIgnoredWithoutMFA", func(t *testing.T) {
			env.User(t, "bob@example.com")
			tok := resetToken(t, env, "bob@example.com")
			if err := env.Service.ConfirmPasswordReset(ctx, tok, newPassword, "123456"); err != nil {
				t.Fatalf("confirm for a user without MFA: %v", err)
			}
		})
	})
}

// TestRacePasswordResetWithMFA: concurrent confirms with one token and
// one code: exactly one resets; the others find the token or the code
// spent.
func TestRacePasswordResetWithMFA(t *testing.T) {
	const n = 20
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 1000})
		p := env.User(t, "ada@example.com")
		en := enableMFA(t, env, p)
		token := resetToken(t, env, "ada@example.com")
		code := codeAt(t, en.Secret, env.Clock.Now())
		codes, unexpected := race(n, func(int) error {
			return env.Service.ConfirmPasswordReset(ctx, token, newPassword, code)
		})
		wantNoUnexpected(t, unexpected)
		if codes[""] != 1 || codes[identity.CodeTokenUsed]+codes[identity.CodeInvalidCode] != n-1 {
			t.Errorf("answers = %v, want 1 success and %d token_used or invalid_code", codes, n-1)
		}
		if n := len(eventsOf(t, env, identity.EventSessionRevoked)); n != 1 {
			t.Errorf("session.revoked events = %d, want 1 (one session, one reset)", n)
		}
	})
}
