package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// Options are the service's policies.
type Options struct {
	Issuer           string
	SessionTTL       time.Duration
	LockoutThreshold int
	LockoutDuration  time.Duration
	// Now is the service's clock; the store's transactions must read the
	// same one.
	Now func() time.Time
	// PublicURL is where the web app's pages for emailed links live
	// (IDENTITY_PUBLIC_URL); empty means the issuer.
	PublicURL string
	// MasterKey (IDENTITY_MASTER_KEY) seals queued mail; without one a
	// random key is used, and only this process can relay its mail.
	MasterKey []byte
	// Metrics receives sign-in outcomes and lockouts; nil records none.
	Metrics *Metrics
	// MailPerAddress bounds the mails of one kind (password reset, email
	// change confirmation, verification resend, invitation) sent to one
	// address on a caller's behalf in MailWindow, and MailPerUser those
	// one user causes (invitations, email change confirmations); beyond
	// them the request is answered as usual and nothing is sent. Zero
	// values take DefaultMailPerAddress, DefaultMailPerUser and
	// DefaultMailWindow.
	MailPerAddress int
	MailPerUser    int
	MailWindow     time.Duration
}

// Service is the identity service.
type Service struct {
	store  Store
	hasher *Hasher
	keys   *KeyRing
	opts   Options
	mail   *MailSealer

	// checking counts the session checks in flight (Authenticate): the
	// hasher takes half its bound while any is (decision 0019).
	checking atomic.Int64
}

// NewService returns the service.
func NewService(store Store, hasher *Hasher, keys *KeyRing, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PublicURL == "" {
		opts.PublicURL = opts.Issuer
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	if opts.MailPerAddress <= 0 {
		opts.MailPerAddress = DefaultMailPerAddress
	}
	if opts.MailPerUser <= 0 {
		opts.MailPerUser = DefaultMailPerUser
	}
	if opts.MailWindow <= 0 {
		opts.MailWindow = DefaultMailWindow
	}
	master := opts.MasterKey
	if len(master) != 32 {
		master = make([]byte, 32)
		_, _ = rand.Read(master)
	}
	mail, _ := NewMailSealer(master) // a 32-byte key cannot fail
	store = countLockouts(store, opts.Metrics)
	s := &Service{store: store, hasher: hasher, keys: keys, opts: opts, mail: mail}
	hasher.contended = func() bool { return s.checking.Load() > 0 }
	return s
}

// MailSealer returns the sealer of the service's queued mail, for the relay.
func (s *Service) MailSealer() *MailSealer { return s.mail }

// Issuer returns the issuer URL the service signs tokens for; its origin
// is identity's public origin.
func (s *Service) Issuer() string { return s.opts.Issuer }

// Keys returns the service's key ring (for the key set endpoint).
func (s *Service) Keys() *KeyRing { return s.keys }

// RegisterInput is a registration request.
type RegisterInput struct {
	Email       string
	Password    string
	DisplayName string
}

// Register creates a user with a personal account and its owner
// membership. Errors: CodeValidation (email invalid/required, password
// too_short/too_long, display_name too_long/invalid), CodeConflict
// (address taken; the wording does not confirm it).
func (s *Service) Register(ctx context.Context, in RegisterInput) (User, error) {
	email := NormalizeEmail(in.Email)
	display, displayOK := normalizeName(in.DisplayName)
	var f errs.Fields
	checkEmail(&f, email)
	checkPassword(&f, in.Password)
	switch {
	case utf8.RuneCountInString(display) > DisplayNameMax:
		f.Add("display_name", RuleTooLong)
	case !displayOK:
		f.Add("display_name", RuleInvalid)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return User{}, err
	}
	// Hash before looking at the address, so a taken one costs the same.
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return User{}, err
	}
	base := Slugify(email[:strings.LastIndexByte(email, '@')], SlugMax-9)
	if base == "" {
		base = "user"
	}
	tok, mail, err := s.verificationFor(email)
	if err != nil {
		return User{}, err
	}
	for attempt := 0; ; attempt++ {
		u, _, err := s.store.CreateUser(ctx, NewUser{Email: email, DisplayName: display, PasswordHash: hash, PersonalSlug: base + "-" + randomSuffix(8),
			Verification: tok, VerificationMail: mail})
		if errors.Is(err, ErrSlugTaken) && attempt < 4 {
			continue
		}
		return u, err
	}
}

// Login checks a password and opens a session, returning its signed token.
// Failures are counted per submitted address whether or not a user holds
// it, and a disabled user's right password counts as a failure, so the
// lockout answers an unknown, a disabled and a registered address alike.
// Errors: CodeUnauthorized (unknown address, wrong password, disabled
// user: one answer for all), CodeLocked (with RetryAfter).
func (s *Service) Login(ctx context.Context, email, password string) (token string, sess Session, err error) {
	defer func() { s.opts.Metrics.login(err) }()
	email = NormalizeEmail(email)
	cred, err := Credentials{}, ErrUserNotFound
	if validEmail(email) { // nothing else is registered (and NUL cannot even be queried on PostgreSQL)
		cred, err = s.store.Credentials(ctx, email)
	}
	switch {
	case errors.Is(err, ErrUserNotFound):
		cred = Credentials{}
		if cred.LockedUntil, err = s.store.AddressLockedUntil(ctx, email); err != nil {
			return "", Session{}, err
		}
	case err != nil:
		return "", Session{}, err
	}
	if cred.LockedUntil != nil && cred.LockedUntil.After(s.opts.Now()) {
		return "", Session{}, LockedError(*cred.LockedUntil, s.opts.Now())
	}
	ok, rehash, err := s.hasher.Verify(ctx, password, cred.PasswordHash)
	if err != nil {
		return "", Session{}, err
	}
	if !ok || cred.UserID == "" || cred.Disabled {
		return "", Session{}, s.loginFailed(ctx, cred.UserID, email)
	}
	if st, err := s.store.MFAState(ctx, cred.UserID); err != nil {
		return "", Session{}, err
	} else if st.Enabled {
		return "", Session{}, s.startMFAChallenge(ctx, cred.UserID)
	}
	newHash := ""
	if rehash {
		if newHash, err = s.hasher.Hash(ctx, password); err != nil {
			return "", Session{}, err
		}
	}
	sess, err = s.store.StartSession(ctx, cred.UserID, s.opts.SessionTTL, newHash)
	if err != nil {
		return "", Session{}, err
	}
	token, err = s.keys.Sign(Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.opts.Issuer,
			Subject:   sess.UserID,
			IssuedAt:  jwt.NewNumericDate(sess.CreatedAt),
			ExpiresAt: jwt.NewNumericDate(sess.ExpiresAt),
		},
		SID: sess.ID,
	})
	return token, sess, err
}

// loginFailed counts a failed sign-in, for the user when one holds the
// address and for the address otherwise, and returns the answer: the
// same 401 for both, or the lockout once the count reaches the threshold.
func (s *Service) loginFailed(ctx context.Context, userID, email string) error {
	var (
		counted bool
		until   time.Time
		err     error
	)
	if userID != "" {
		counted, until, err = s.store.RecordLoginFailure(ctx, userID, s.opts.LockoutThreshold, s.opts.LockoutDuration)
	} else {
		counted, until, err = s.store.RecordAddressFailure(ctx, email, s.opts.LockoutThreshold, s.opts.LockoutDuration)
	}
	if err != nil {
		return err
	}
	if !counted {
		return LockedError(until, s.opts.Now())
	}
	return ErrUnauthorized
}

// Authenticate resolves a bearer token to its principal: signature,
// issuer and expiry first, then the live session in the store. With
// accountID it also loads the caller's membership of that account.
// Errors: CodeUnauthorized.
func (s *Service) Authenticate(ctx context.Context, token, accountID string) (Principal, error) {
	if token == "" {
		return Principal{}, ErrUnauthorized
	}
	s.checking.Add(1)
	defer s.checking.Add(-1)
	if strings.HasPrefix(token, APIKeyPrefix) {
		return s.authenticateAPIKey(ctx, token, accountID)
	}
	c, err := s.keys.Verify(token, s.opts.Issuer, s.opts.Now)
	if err != nil {
		return Principal{}, err
	}
	if !ids.Valid(c.Subject) || !ids.Valid(c.SID) {
		return Principal{}, ErrUnauthorized
	}
	if accountID != "" && !ids.Valid(accountID) {
		accountID = "" // a malformed id names no account: the caller is not a member
	}
	return s.store.Authenticate(ctx, c.SID, c.Subject, accountID)
}

// Logout ends the principal's session.
func (s *Service) Logout(ctx context.Context, p Principal) error {
	return s.store.EndSession(ctx, p.SessionID)
}

// SetStaff marks a user as staff or not; actor names who made the change
// in the audit trail (the command line's operator). Errors: CodeNotFound.
func (s *Service) SetStaff(ctx context.Context, email string, staff bool, actor string) error {
	return s.store.SetStaff(ctx, NormalizeEmail(email), staff, actor)
}

// Directory search limits.
const (
	SearchDefaultLimit = 25
	SearchMaxLimit     = 50
	SearchMinQuery     = 2
)

// SearchUsers is the staff directory. query is trimmed and must keep at
// least two characters; limit 0 means the default, over 50 is refused.
// Errors: CodeForbidden (not staff), CodeValidation (query
// too_short/invalid, limit invalid/too_large).
func (s *Service) SearchUsers(ctx context.Context, p Principal, query string, limit int) ([]StaffRecord, error) {
	if !p.User.Staff {
		return nil, ErrNotStaff
	}
	query = strings.TrimSpace(query)
	var f errs.Fields
	switch {
	case utf8.RuneCountInString(query) < SearchMinQuery:
		f.Add("query", RuleTooShort)
	case hasControl(query):
		f.Add("query", RuleInvalid)
	}
	switch {
	case limit < 0:
		f.Add("limit", RuleInvalid)
	case limit > SearchMaxLimit:
		f.Add("limit", RuleTooLarge)
	case limit == 0:
		limit = SearchDefaultLimit
	}
	if err := f.Err(CodeValidation, "the search parameters are invalid"); err != nil {
		return nil, err
	}
	return s.store.SearchUsers(ctx, query, limit)
}

// newToken returns a random token and the digest the store keeps.
func newToken() (token, digest string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, TokenDigest(token)
}

// TokenDigest is the stored form of a bearer secret (invitation token):
// SHA-256 suffices because the secret has 256 random bits.
func TokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomSuffix(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b)
}
