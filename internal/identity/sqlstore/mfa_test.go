package sqlstore_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// codeAt is the TOTP code of secret at t.
func codeAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// enableMFA enrols and confirms TOTP for p and returns the enrolment.
// The clock is moved to the next step so later codes are fresh.
func enableMFA(t *testing.T, env *identitytest.Env, p identity.Principal) identity.Enrolment {
	t.Helper()
	en, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password)
	if err != nil {
		t.Fatalf("enrol: %v", err)
	}
	if _, err := env.Service.ConfirmTOTP(ctx, p, codeAt(t, en.Secret, env.Clock.Now())); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	env.Clock.Advance(30 * time.Second)
	return en
}

// challenge signs email in with the password and returns the MFA challenge.
func challenge(t *testing.T, env *identitytest.Env, email string) string {
	t.Helper()
	_, _, err := env.Service.Login(ctx, email, identitytest.Password)
	var mr *identity.MFARequiredError
	if !errors.As(err, &mr) {
		t.Fatalf("login = %v, want mfa_required", err)
	}
	return mr.Challenge
}

func TestMFA(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 3})
		p := env.User(t, "ada@example.com")
		en := enableMFA(t, env, p)
		if len(en.RecoveryCodes) != identity.RecoveryCodeCount {
			t.Fatalf("recovery codes = %d, want %d", len(en.RecoveryCodes), identity.RecoveryCodeCount)
		}
		if got := eventsOf(t, env, identity.EventMFAEnabled); len(got) != 1 || got[0].Data["user_id"] != p.User.ID {
			t.Fatalf("mfa.enabled events = %v", got)
		}
		if got := env.Mail(t, "ada@example.com", identity.TemplateMFAEnabledNotice); len(got) != 1 || len(got[0]) != 0 {
			t.Fatalf("mfa_enabled_notice mails = %v, want one with no data", got)
		}
		var sealed []byte
		if err := env.DB.QueryRow(ctx, `SELECT secret_sealed FROM mfa_totp WHERE user_id = $1`, p.User.ID).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(sealed, []byte(en.Secret)) {
			t.Fatal("the TOTP secret is stored in the clear")
		}

		t.Run("OK", func(t *testing.T) {
			ch := challenge(t, env, "ada@example.com")
			code := codeAt(t, en.Secret, env.Clock.Now())
			if _, _, err := env.Service.LoginMFA(ctx, ch, code); err != nil {
				t.Fatalf("login mfa: %v", err)
			}
			_, _, err := env.Service.LoginMFA(ctx, ch, code)
			wantCode(t, err, identity.CodeTokenUsed)
		})
		t.Run("ErrReplayedCode", func(t *testing.T) {
			code := codeAt(t, en.Secret, env.Clock.Now()) // used by OK
			_, _, err := env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), code)
			wantCode(t, err, identity.CodeInvalidCode)
		})
		t.Run("OKOneStepOfSkew", func(t *testing.T) {
			env.Clock.Advance(60 * time.Second)
			code := codeAt(t, en.Secret, env.Clock.Now().Add(-30*time.Second))
			if _, _, err := env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), code); err != nil {
				t.Fatalf("a code one step old: %v", err)
			}
		})
		t.Run("ErrTwoStepsOfSkew", func(t *testing.T) {
			env.Clock.Advance(120 * time.Second)
			code := codeAt(t, en.Secret, env.Clock.Now().Add(-60*time.Second))
			_, _, err := env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), code)
			wantCode(t, err, identity.CodeInvalidCode)
		})
		t.Run("OKRecoveryCodeOnce", func(t *testing.T) {
			if _, _, err := env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), en.RecoveryCodes[0]); err != nil {
				t.Fatalf("recovery code: %v", err)
			}
			_, _, err := env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), en.RecoveryCodes[0])
			wantCode(t, err, identity.CodeInvalidCode)
		})
		t.Run("ErrChallengeExpired", func(t *testing.T) {
			ch := challenge(t, env, "ada@example.com")
			env.Clock.Advance(identity.MFAChallengeTTL + time.Second)
			_, _, err := env.Service.LoginMFA(ctx, ch, codeAt(t, en.Secret, env.Clock.Now()))
			wantCode(t, err, identity.CodeTokenExpired)
			_, _, err = env.Service.LoginMFA(ctx, "unknown", "123456")
			wantCode(t, err, identity.CodeNotFound)
		})
		t.Run("ErrWrongCodesLockOut", func(t *testing.T) {
			env.Clock.Advance(30 * time.Second)
			mfaLogin(t, env, "ada@example.com", codeAt(t, en.Secret, env.Clock.Now())) // clears the count
			env.Clock.Advance(30 * time.Second)
			ch := challenge(t, env, "ada@example.com")
			for range 2 {
				_, _, err := env.Service.LoginMFA(ctx, ch, "000000x")
				wantCode(t, err, identity.CodeInvalidCode)
			}
			_, _, err := env.Service.LoginMFA(ctx, ch, "abcde-fghij")
			wantCode(t, err, identity.CodeInvalidCode) // the third failure locks
			_, _, err = env.Service.LoginMFA(ctx, ch, codeAt(t, en.Secret, env.Clock.Now()))
			wantCode(t, err, identity.CodeLocked)
			env.Clock.Advance(16 * time.Minute)
		})
		t.Run("OKRecoveryCodesReplaced", func(t *testing.T) {
			p := env.Principal(t, mfaLogin(t, env, "ada@example.com", codeAt(t, en.Secret, env.Clock.Now())), "")
			env.Clock.Advance(30 * time.Second)
			fresh, err := env.Service.RegenerateRecoveryCodes(ctx, p, en.RecoveryCodes[1])
			if err != nil {
				t.Fatalf("regenerate: %v", err)
			}
			_, _, err = env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), en.RecoveryCodes[2])
			wantCode(t, err, identity.CodeInvalidCode)
			en.RecoveryCodes = fresh
		})
		t.Run("OKRotationKeepsOldUntilConfirmed", func(t *testing.T) {
			next, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password)
			if err != nil {
				t.Fatalf("rotate: %v", err)
			}
			env.Clock.Advance(30 * time.Second)
			mfaLogin(t, env, "ada@example.com", codeAt(t, en.Secret, env.Clock.Now()))
			env.Clock.Advance(30 * time.Second)
			if _, err := env.Service.ConfirmTOTP(ctx, p, codeAt(t, next.Secret, env.Clock.Now())); err != nil {
				t.Fatalf("confirm rotation: %v", err)
			}
			if got := len(eventsOf(t, env, identity.EventMFAEnabled)); got != 2 {
				t.Fatalf("mfa.enabled events = %d, want 2", got)
			}
			if got := len(env.Mail(t, "ada@example.com", identity.TemplateMFAEnabledNotice)); got != 2 {
				t.Fatalf("mfa_enabled_notice mails = %d, want 2 (a rotation is told too)", got)
			}
			en = next
		})
		t.Run("OKVerifyMFAConsumesOnce", func(t *testing.T) {
			env.Clock.Advance(30 * time.Second)
			code := codeAt(t, en.Secret, env.Clock.Now())
			if enabled, err := env.Service.VerifyMFA(ctx, p.User.ID, code); !enabled || err != nil {
				t.Fatalf("VerifyMFA = %v, %v; want enabled, nil", enabled, err)
			}
			_, err := env.Service.VerifyMFA(ctx, p.User.ID, code)
			wantCode(t, err, identity.CodeInvalidCode)
		})
		t.Run("OKDisable", func(t *testing.T) {
			if err := env.Service.DisableTOTP(ctx, p, en.RecoveryCodes[0]); err != nil {
				t.Fatalf("disable: %v", err)
			}
			if got := eventsOf(t, env, identity.EventMFADisabled); len(got) != 1 {
				t.Fatalf("mfa.disabled events = %v", got)
			}
			env.Login(t, "ada@example.com") // no challenge any more
		})
	})
}

// mfaLogin signs email in through the MFA step with code.
func mfaLogin(t *testing.T, env *identitytest.Env, email, code string) string {
	t.Helper()
	tok, _, err := env.Service.LoginMFA(ctx, challenge(t, env, email), code)
	if err != nil {
		t.Fatalf("login mfa: %v", err)
	}
	return tok
}

func TestRaceMFACode(t *testing.T) {
	const n = 20
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 1000})
		p := env.User(t, "ada@example.com")
		en := enableMFA(t, env, p)
		for _, tc := range []struct {
			name string
			code func() string
		}{
			{"TOTPCodeOnce", func() string { return codeAt(t, en.Secret, env.Clock.Now()) }},
			{"RecoveryCodeOnce", func() string { return en.RecoveryCodes[3] }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				chs := make([]string, n)
				for i := range chs {
					chs[i] = challenge(t, env, "ada@example.com")
				}
				code := tc.code()
				codes, unexpected := race(n, func(i int) error {
					_, _, err := env.Service.LoginMFA(ctx, chs[i], code)
					return err
				})
				wantNoUnexpected(t, unexpected)
				if codes[""] != 1 || codes[identity.CodeInvalidCode] != n-1 {
					t.Errorf("answers = %v, want 1 success and %d invalid_code", codes, n-1)
				}
			})
		}
	})
}

// TestMFARotationConfirmedRightAfterSignIn: each secret has its own replay
// guard. A sign-in with the old secret in a time step does not make the
// new secret's code for that step a replay, so the rotation confirms (and
// nothing counts toward the lockout); the confirming code is then spent
// for the new secret.
func TestMFARotationConfirmedRightAfterSignIn(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		p := env.User(t, "ada@example.com")
		old := enableMFA(t, env, p)
		next, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password)
		if err != nil {
			t.Fatalf("rotate: %v", err)
		}
		mfaLogin(t, env, "ada@example.com", codeAt(t, old.Secret, env.Clock.Now()))
		// The old secret's step is spent: the same code is a replay.
		_, _, err = env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), codeAt(t, old.Secret, env.Clock.Now()))
		wantCode(t, err, identity.CodeInvalidCode)
		mfaLogin(t, env, "ada@example.com", old.RecoveryCodes[0]) // clears the count the replay made

		code := codeAt(t, next.Secret, env.Clock.Now())
		if _, err := env.Service.ConfirmTOTP(ctx, p, code); err != nil {
			t.Fatalf("confirm the rotation in the step of the last sign-in: %v", err)
		}
		if n, _ := failedLogins(t, env, "ada@example.com"); n != 0 {
			t.Errorf("failed_logins = %d after a valid confirmation, want 0", n)
		}
		_, _, err = env.Service.LoginMFA(ctx, challenge(t, env, "ada@example.com"), code)
		wantCode(t, err, identity.CodeInvalidCode) // the new secret's step is spent by the confirmation
		env.Clock.Advance(30 * time.Second)
		mfaLogin(t, env, "ada@example.com", codeAt(t, next.Secret, env.Clock.Now()))

		// A code checked against a pending secret that another enrolment
		// has since replaced confirms nothing.
		if _, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password); err != nil {
			t.Fatal(err)
		}
		stale, err := env.Store.MFAState(ctx, p.User.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.EnrolTOTP(ctx, p, identitytest.Password); err != nil {
			t.Fatal(err)
		}
		_, err = env.Store.ConfirmTOTP(ctx, p.User.ID, stale.Pending, 1<<40, identity.OutgoingMail{})
		if !errors.Is(err, identity.ErrInvalidCode) {
			t.Errorf("confirm a replaced enrolment: %v, want ErrInvalidCode", err)
		}
	})
}
