package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/platformco/platform/internal/errs"
)

// TOTP parameters (RFC 6238 as every authenticator app reads it).
const (
	totpPeriod        = 30
	totpSkew          = 1 // one step either side
	RecoveryCodeCount = 10
	// MFAChallengeTTL is how long the second step of a sign-in may take.
	MFAChallengeTTL = 5 * time.Minute
	// recoveryAlphabet avoids letters read alike (0/o, 1/l).
	recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	recoveryLen      = 10
)

// MFA error codes.
const (
	CodeMFARequired = "mfa_required" // 401 at sign-in (with a challenge), 403 elsewhere
	CodeInvalidCode = "invalid_code" // 401
	// A used or expired challenge answers CodeTokenUsed or CodeTokenExpired
	// (verification.go), as every single-use token does.
)

var (
	ErrInvalidCode      = errs.New(CodeInvalidCode, "the code is wrong, expired or already used")
	ErrMFARequired      = errs.New(CodeMFARequired, "this account uses two-factor authentication: send a code from the authenticator app or a recovery code as well")
	ErrMFANotEnrolled   = errs.New(CodeNotFound, "no multi-factor enrolment to act on")
	ErrChallengeUnknown = errs.New(CodeNotFound, "no such sign-in challenge")
	ErrChallengeExpired = errs.New(CodeTokenExpired, "the sign-in challenge has expired; sign in again")
	ErrChallengeUsed    = errs.New(CodeTokenUsed, "the sign-in challenge has already been used; sign in again")
)

// MFARequiredError answers a right password of a user with MFA: no
// session, a challenge for POST /v1/session/mfa instead.
type MFARequiredError struct {
	Challenge string
	ExpiresAt time.Time
}

func (e *MFARequiredError) Error() string { return CodeMFARequired }

// MFAState is a user's TOTP enrolment as stored; the secrets are sealed.
type MFAState struct {
	Enabled   bool
	Secret    []byte // sealed, the active secret (nil when not enabled)
	Pending   []byte // sealed, an enrolment awaiting confirmation
	EnabledAt *time.Time
}

// Factor is one proof of the second factor as the store consumes it:
// either a TOTP time step (accepted only if later than the last one
// accepted) or the digest of a recovery code (accepted once).
type Factor struct {
	Step           int64
	RecoveryDigest string
	// Pending says the step was checked against the pending secret (only
	// confirmation uses it).
	Pending bool
}

// MFAStore persists TOTP enrolments, recovery codes and challenges.
type MFAStore interface {
	// MFAState returns userID's enrolment (zero when none).
	MFAState(ctx context.Context, userID string) (MFAState, error)
	// LockedUntil returns when userID's lockout ends (nil when not locked).
	LockedUntil(ctx context.Context, userID string) (*time.Time, error)
	// EnrolTOTP stores a pending secret and pending recovery codes,
	// replacing any earlier pending enrolment; an active secret stays.
	EnrolTOTP(ctx context.Context, userID string, pendingSealed []byte, recoveryDigests []string) error
	// ConfirmTOTP makes the pending secret, which must still be pending
	// (the code was checked against it), and its recovery codes active,
	// starting the new secret's replay guard at step; it emits
	// identity.mfa.enabled and queues notice, in one transaction. Errors:
	// ErrMFANotEnrolled, ErrInvalidCode (another enrolment replaced
	// pending meanwhile).
	ConfirmTOTP(ctx context.Context, userID string, pending []byte, step int64, notice OutgoingMail) (time.Time, error)
	// DisableTOTP consumes f and removes the enrolment and its codes,
	// emitting identity.mfa.disabled. Errors: ErrInvalidCode, ErrMFANotEnrolled.
	DisableTOTP(ctx context.Context, userID string, f Factor) error
	// ReplaceRecoveryCodes consumes f and replaces the active recovery
	// codes. Errors: ErrInvalidCode, ErrMFANotEnrolled.
	ReplaceRecoveryCodes(ctx context.Context, userID string, f Factor, digests []string) error
	// ConsumeFactor consumes f on its own (a flow that needs the factor
	// inside its own transaction uses sqlstore's useFactor there).
	// Errors: ErrInvalidCode.
	ConsumeFactor(ctx context.Context, userID string, f Factor) error
	// CreateChallenge stores a challenge for userID under digest.
	CreateChallenge(ctx context.Context, userID, digest string, ttl time.Duration) (time.Time, error)
	// ChallengeUser returns the user of a live challenge. Errors:
	// ErrChallengeUnknown, ErrChallengeExpired, ErrChallengeUsed.
	ChallengeUser(ctx context.Context, digest string) (string, error)
	// CompleteChallenge consumes f and the challenge and opens a session,
	// all in one transaction, exactly as StartSession. Errors:
	// ErrInvalidCode, ErrChallengeUsed, ErrChallengeExpired, the locked error.
	CompleteChallenge(ctx context.Context, digest, userID string, f Factor, ttl time.Duration) (Session, error)
}

// Enrolment is the answer to a TOTP enrolment: shown once.
type Enrolment struct {
	Secret        string
	URL           string
	RecoveryCodes []string
}

// EnrolTOTP starts a TOTP enrolment (or a rotation, while one is enabled)
// proven by the password. Errors: CodeValidation (password required),
// CodeInvalidCredentials, CodeLocked.
func (s *Service) EnrolTOTP(ctx context.Context, p Principal, password string) (Enrolment, error) {
	if password == "" {
		var f errs.Fields
		f.Add("password", RuleRequired)
		return Enrolment{}, f.Err(CodeValidation, "the request has invalid fields")
	}
	if err := s.checkPassword(ctx, p, password); err != nil {
		return Enrolment{}, err
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: issuerLabel(s.opts.Issuer), AccountName: p.User.Email,
		Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return Enrolment{}, fmt.Errorf("totp: generate: %w", err)
	}
	sealed, err := s.sealTOTP(p.User.ID, key.Secret())
	if err != nil {
		return Enrolment{}, err
	}
	codes, digests := newRecoveryCodes()
	if err := s.store.EnrolTOTP(ctx, p.User.ID, sealed, digests); err != nil {
		return Enrolment{}, err
	}
	return Enrolment{Secret: key.Secret(), URL: key.URL(), RecoveryCodes: codes}, nil
}

// ConfirmTOTP activates the pending enrolment with a code from it and
// tells the user's address (mfa_enabled_notice), so a takeover that turns
// MFA on, or rotates it, does not pass unseen. Errors: ErrMFANotEnrolled, ErrInvalidCode (counted toward the lockout),
// CodeLocked.
func (s *Service) ConfirmTOTP(ctx context.Context, p Principal, code string) (time.Time, error) {
	st, err := s.store.MFAState(ctx, p.User.ID)
	if err != nil {
		return time.Time{}, err
	}
	if st.Pending == nil {
		return time.Time{}, ErrMFANotEnrolled
	}
	if err := s.notLocked(ctx, p.User.ID); err != nil {
		return time.Time{}, err
	}
	secret, err := s.openTOTP(p.User.ID, st.Pending)
	if err != nil {
		return time.Time{}, err
	}
	step, ok := matchTOTP(secret, code, s.opts.Now())
	if !ok {
		return time.Time{}, s.wrongCode(ctx, p.User.ID)
	}
	notice, err := s.mail.Mail(TemplateMFAEnabledNotice, p.User.Email, map[string]string{})
	if err != nil {
		return time.Time{}, err
	}
	at, err := s.store.ConfirmTOTP(ctx, p.User.ID, st.Pending, step, notice)
	if errors.Is(err, ErrInvalidCode) {
		return time.Time{}, s.wrongCode(ctx, p.User.ID)
	}
	return at, err
}

// DisableTOTP turns MFA off with a valid TOTP or recovery code. Errors:
// ErrMFANotEnrolled, ErrInvalidCode, CodeLocked.
func (s *Service) DisableTOTP(ctx context.Context, p Principal, code string) error {
	f, err := s.factor(ctx, p.User.ID, code)
	if err != nil {
		return err
	}
	err = s.store.DisableTOTP(ctx, p.User.ID, f)
	if errors.Is(err, ErrInvalidCode) {
		return s.wrongCode(ctx, p.User.ID)
	}
	return err
}

// RegenerateRecoveryCodes replaces the recovery codes, proven by a valid
// factor; the old set dies. Errors: as DisableTOTP.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, p Principal, code string) ([]string, error) {
	f, err := s.factor(ctx, p.User.ID, code)
	if err != nil {
		return nil, err
	}
	codes, digests := newRecoveryCodes()
	err = s.store.ReplaceRecoveryCodes(ctx, p.User.ID, f, digests)
	if errors.Is(err, ErrInvalidCode) {
		return nil, s.wrongCode(ctx, p.User.ID)
	}
	return codes, err
}

// VerifyMFA checks and consumes (once, under concurrency) a factor of a user with MFA enabled (for
// flows outside sign-in, such as a password reset). It reports whether
// the user has MFA at all. Errors: ErrInvalidCode, CodeLocked.
func (s *Service) VerifyMFA(ctx context.Context, userID, code string) (enabled bool, err error) {
	st, err := s.store.MFAState(ctx, userID)
	if err != nil || !st.Enabled {
		return false, err
	}
	f, err := s.factor(ctx, userID, code)
	if err != nil {
		return true, err
	}
	if err := s.store.ConsumeFactor(ctx, userID, f); errors.Is(err, ErrInvalidCode) {
		return true, s.wrongCode(ctx, userID)
	} else if err != nil {
		return true, err
	}
	return true, nil
}

// sign issues the token of a new session.
func (s *Service) sign(sess Session) (string, error) {
	return s.keys.Sign(Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.opts.Issuer,
			Subject:   sess.UserID,
			IssuedAt:  jwt.NewNumericDate(sess.CreatedAt),
			ExpiresAt: jwt.NewNumericDate(sess.ExpiresAt),
		},
		SID: sess.ID,
	})
}

// startMFAChallenge is the end of a right password for a user with MFA.
func (s *Service) startMFAChallenge(ctx context.Context, userID string) error {
	tok, digest := newToken()
	exp, err := s.store.CreateChallenge(ctx, userID, digest, MFAChallengeTTL)
	if err != nil {
		return err
	}
	return &MFARequiredError{Challenge: tok, ExpiresAt: exp}
}

// LoginMFA finishes a sign-in with its challenge and a TOTP or recovery
// code, opening the session exactly as Login does. Errors:
// ErrChallengeUnknown, ErrChallengeExpired, ErrChallengeUsed,
// ErrInvalidCode (counted toward the lockout), CodeLocked.
func (s *Service) LoginMFA(ctx context.Context, challenge, code string) (string, Session, error) {
	if challenge == "" || len(challenge) > 128 {
		return "", Session{}, ErrChallengeUnknown
	}
	digest := TokenDigest(challenge)
	userID, err := s.store.ChallengeUser(ctx, digest)
	if err != nil {
		return "", Session{}, err
	}
	f, err := s.factor(ctx, userID, code)
	if err != nil {
		return "", Session{}, err
	}
	sess, err := s.store.CompleteChallenge(ctx, digest, userID, f, s.opts.SessionTTL)
	if errors.Is(err, ErrInvalidCode) {
		return "", Session{}, s.wrongCode(ctx, userID)
	}
	if err != nil {
		return "", Session{}, err
	}
	tok, err := s.sign(sess)
	return tok, sess, err
}

// factor checks code against userID's active factor and returns what the
// store must consume. Nothing is consumed here: the store's conditional
// UPDATE decides which of concurrent uses wins.
func (s *Service) factor(ctx context.Context, userID, code string) (Factor, error) {
	st, err := s.store.MFAState(ctx, userID)
	if err != nil {
		return Factor{}, err
	}
	return s.factorOf(ctx, userID, st, code)
}

// factorOf is factor for an enrolment already read.
func (s *Service) factorOf(ctx context.Context, userID string, st MFAState, code string) (Factor, error) {
	if !st.Enabled {
		return Factor{}, ErrMFANotEnrolled
	}
	if err := s.notLocked(ctx, userID); err != nil {
		return Factor{}, err
	}
	if digest, ok := ParseRecoveryCode(code); ok {
		return Factor{RecoveryDigest: digest}, nil
	}
	secret, err := s.openTOTP(userID, st.Secret)
	if err != nil {
		return Factor{}, err
	}
	step, ok := matchTOTP(secret, code, s.opts.Now())
	if !ok {
		return Factor{}, s.wrongCode(ctx, userID)
	}
	return Factor{Step: step}, nil
}

func (s *Service) notLocked(ctx context.Context, userID string) error {
	until, err := s.store.LockedUntil(ctx, userID)
	if err != nil {
		return err
	}
	if until != nil && until.After(s.opts.Now()) {
		return LockedError(*until, s.opts.Now())
	}
	return nil
}

// wrongCode counts a wrong code exactly as a wrong password.
func (s *Service) wrongCode(ctx context.Context, userID string) error {
	counted, until, err := s.store.RecordLoginFailure(ctx, userID, s.opts.LockoutThreshold, s.opts.LockoutDuration)
	if err != nil {
		return err
	}
	if !counted {
		return LockedError(until, s.opts.Now())
	}
	return ErrInvalidCode
}

// ParseTOTPCode accepts six ASCII digits, spaces allowed between them.
func ParseTOTPCode(code string) (string, bool) {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != 6 {
		return "", false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return "", false
		}
	}
	return code, true
}

// matchTOTP returns the time step whose code is code, allowing one step
// of skew either way, comparing in constant time.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	code, ok := ParseTOTPCode(code)
	if !ok {
		return 0, false
	}
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	for d := -totpSkew; d <= totpSkew; d++ {
		t := now.Add(time.Duration(d*totpPeriod) * time.Second)
		want, err := totp.GenerateCodeCustom(secret, t, opts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return t.Unix() / totpPeriod, true
		}
	}
	return 0, false
}

// ParseRecoveryCode accepts a recovery code as shown (xxxxx-xxxxx) or
// without the dash, in any case, and returns its stored digest.
func ParseRecoveryCode(code string) (string, bool) {
	c := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(code), "-", ""))
	if len(c) != recoveryLen {
		return "", false
	}
	for i := 0; i < len(c); i++ {
		if strings.IndexByte(recoveryAlphabet, c[i]) < 0 {
			return "", false
		}
	}
	return TokenDigest("recovery:" + c), true
}

// newRecoveryCodes returns fresh codes as shown and their digests. Each
// has 10 characters of a 31-letter alphabet (about 49 bits): enough for a
// code that only a locked-out-limited sign-in can try.
func newRecoveryCodes() (codes, digests []string) {
	for range RecoveryCodeCount {
		b := make([]byte, recoveryLen)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = recoveryAlphabet[int(b[i])%len(recoveryAlphabet)]
		}
		c := string(b)
		codes = append(codes, c[:5]+"-"+c[5:])
		digests = append(digests, TokenDigest("recovery:"+c))
	}
	return codes, digests
}

// sealTOTP seals a secret with the master key, bound to its user, so a
// sealed secret copied to another user's row does not open.
func (s *Service) sealTOTP(userID, secret string) ([]byte, error) {
	aead := s.keys.keys.aead
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(secret), []byte("mfa-totp:"+userID)), nil
}

func (s *Service) openTOTP(userID string, sealed []byte) (string, error) {
	aead := s.keys.keys.aead
	n := aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("sealed TOTP secret too short")
	}
	b, err := aead.Open(nil, sealed[:n], sealed[n:], []byte("mfa-totp:"+userID))
	if err != nil {
		return "", errors.New("a TOTP secret does not open with IDENTITY_MASTER_KEY")
	}
	return string(b), nil
}

// issuerLabel names the platform in authenticator apps: the issuer's
// host, or "platform".
func issuerLabel(issuer string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(issuer, "https://"), "http://")
	if i := strings.IndexAny(h, "/:"); i >= 0 {
		h = h[:i]
	}
	if h == "" {
		return "platform"
	}
	return h
}

// MFAStatus is whether the caller's second factor is on, and whether an
// enrolment awaits its confirming code.
type MFAStatus struct {
	Enabled   bool
	EnabledAt *time.Time
	Pending   bool
}

// MFAStatus reads the caller's two-factor state (never a secret).
func (s *Service) MFAStatus(ctx context.Context, p Principal) (MFAStatus, error) {
	st, err := s.store.MFAState(ctx, p.User.ID)
	if err != nil {
		return MFAStatus{}, err
	}
	return MFAStatus{Enabled: st.Enabled, EnabledAt: st.EnabledAt, Pending: st.Pending != nil}, nil
}
