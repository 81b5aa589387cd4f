// Package keyholder is the registry-credential exchange's domain: a pull
// capability from box goes in, a pull-only credential for one repository and
// one version range comes out, and every pull made with it is recorded. It
// holds no SQL and no HTTP; sqlstore, httpapi and registry adapt it.
package keyholder

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/semver"
)

// Error codes keyholder answers with. httpapi maps each to one status,
// and answers identity's refusals (through identity's client) in them.
const (
	CodeUnauthenticated   = "unauthenticated"    // 401
	CodeNotFound          = "not_found"          // 404
	CodeUnprocessable     = "unprocessable"      // 422
	CodeCapabilityUsed    = "capability_used"    // 410, box's
	CodeCapabilityExpired = "capability_expired" // 410, box's
	CodeUnavailable       = "unavailable"        // 503
	CodeInsufficientScope = "insufficient_scope" // 403: an API key without account:read
	CodeForbidden         = "forbidden"          // 403: not staff, on the staff read
	// A download box refused, with box's codes.
	CodeEntitlementRequired = "entitlement_required" // 403
	CodeVersionNotGranted   = "version_not_granted"  // 403
)

// DefaultCredentialTTL and MaxCredentialTTL bound how long an issued
// credential lives: the revocation window of keyholder.md section 2.
const (
	DefaultCredentialTTL = time.Hour
	MaxCredentialTTL     = 24 * time.Hour
)

// UsernamePrefix starts every credential's username; the rest is its id.
const UsernamePrefix = "cap_"

// passwordPrefix marks keyholder passwords so a leaked one is recognisable
// in secret scanners.
const passwordPrefix = "khp_"

// Redemption is what box answers for a capability redeemed once.
type Redemption struct {
	AccountID    string
	Artifact     string
	VersionRange *string
}

// Box redeems capabilities. Redeem answers box's own refusals (404
// not_found, 410 capability_used / capability_expired) as *errs.Error with
// those codes, and anything it cannot trust as CodeUnavailable.
type Box interface {
	Redeem(ctx context.Context, capability string) (Redemption, error)
}

// Member is a caller confirmed a member of AccountID, as httpapi resolves
// it with identity's client: the role, and an API key's scopes (Role
// "api_key"). Domain methods take it, never a token.
type Member struct {
	AccountID string
	Role      string
	Scopes    []string
}

// Staff is a caller confirmed as platform staff.
type Staff struct {
	UserID string
}

// ValidAccountID reports whether id can name an account; a malformed id
// is answered not_found before identity is asked.
func ValidAccountID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil
}

// scopeAccountRead is the API-key scope that reads an account's records
// (identity-lifecycle.md section 5), the pull record among them.
const scopeAccountRead = "account:read"

// Credential is one issued pull credential. The password is never stored:
// only its digest.
type Credential struct {
	ID             string
	PasswordDigest string
	AccountID      string
	Repository     string
	VersionRange   *string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	RevokedAt      *time.Time
}

// Username is the credential's Basic-auth user name.
func (c Credential) Username() string { return UsernamePrefix + c.ID }

// Range is the credential's version range (Any when it has none). Stored
// ranges were parsed at issue, so an error means a damaged row: callers
// admit nothing then, never everything.
func (c Credential) Range() (semver.Range, error) {
	if c.VersionRange == nil {
		return semver.Any(), nil
	}
	return semver.ParseRange(*c.VersionRange)
}

// Issued is a credential together with its password, shown once.
type Issued struct {
	Credential
	Password string
}

// Pull is one delivery: a manifest fetched by tag with a credential, or
// (CredentialID empty) one file of a release downloaded in a browser.
type Pull struct {
	ID           int64
	CredentialID string
	AccountID    string
	Repository   string
	Tag          string
	Digest       string
	PulledAt     time.Time
	// File is the downloaded file's name; empty for a credential's pull.
	File string
}

// Store persists credentials and pulls.
type Store interface {
	// CreateCredential stores c (its digest, never a password).
	CreateCredential(ctx context.Context, c Credential) (Credential, error)
	// Credential returns the credential with id, or CodeNotFound.
	Credential(ctx context.Context, id string) (Credential, error)
	// RevokeCredential ends the credential early; revoking twice is a no-op.
	RevokeCredential(ctx context.Context, id string) error
	// RecordPull appends p.
	RecordPull(ctx context.Context, p Pull) error
	// Pulls returns the account's pulls older than the pull before (every
	// pull when before is 0), newest first, at most limit.
	Pulls(ctx context.Context, accountID string, before int64, limit int) ([]Pull, error)
	// Now is the store's clock.
	Now() time.Time
	// Ready reports whether the database answers.
	Ready(ctx context.Context) error
}

// Service is keyholder's use cases.
type Service struct {
	store    Store
	box      Box
	ttl      time.Duration
	registry string
	random   io.Reader
	checked  checkedCredentials
}

// NewService returns the service. registry is the host name customers use
// (KEYHOLDER_PUBLIC_HOST); ttl is each credential's lifetime.
func NewService(store Store, box Box, ttl time.Duration, registry string) *Service {
	if ttl <= 0 {
		ttl = DefaultCredentialTTL
	}
	return &Service{store: store, box: box, ttl: ttl, registry: registry, random: rand.Reader,
		checked: checkedCredentials{m: map[string]checkedCredential{}}}
}

// Registry is the public registry host written into every credential.
func (s *Service) Registry() string { return s.registry }

// Exchange redeems capability at box and issues a credential for what it
// grants. Box's refusals pass through with box's codes (not_found,
// capability_used, capability_expired); box unreachable is
// CodeUnavailable and nothing is stored. A blank capability is
// CodeUnprocessable.
func (s *Service) Exchange(ctx context.Context, capability *string) (Issued, error) {
	if capability == nil || strings.TrimSpace(*capability) == "" {
		f := errs.Fields{}
		f.Add("capability", "required")
		return Issued{}, f.Err(CodeUnprocessable, "capability is required")
	}
	// Redeeming spends the capability, so keyholder first makes sure it
	// can store what it gets for it: with the database down the customer
	// keeps a capability still good for a later exchange. (A failure in
	// the instant between the two still spends it; box issues a new one
	// to any member who asks.)
	if err := s.store.Ready(ctx); err != nil {
		return Issued{}, errs.New(CodeUnavailable, "service temporarily unavailable")
	}
	red, err := s.box.Redeem(ctx, *capability)
	if err != nil {
		return Issued{}, err
	}
	if red.VersionRange != nil {
		if _, err := semver.ParseRange(*red.VersionRange); err != nil {
			return Issued{}, errs.New(CodeUnavailable, "box answered an unreadable version range")
		}
	}
	id, err := uuid.NewRandomFromReader(s.random)
	if err != nil {
		return Issued{}, err
	}
	secret := make([]byte, 32)
	if _, err := io.ReadFull(s.random, secret); err != nil {
		return Issued{}, err
	}
	password := passwordPrefix + base64.RawURLEncoding.EncodeToString(secret)
	now := s.store.Now()
	c, err := s.store.CreateCredential(ctx, Credential{
		ID:             id.String(),
		PasswordDigest: digest(password),
		AccountID:      red.AccountID,
		Repository:     red.Artifact,
		VersionRange:   red.VersionRange,
		CreatedAt:      now,
		ExpiresAt:      now.Add(s.ttl),
	})
	if err != nil {
		return Issued{}, err
	}
	return Issued{Credential: c, Password: password}, nil
}

// ErrBadCredential is every refused Basic credential: unknown, malformed,
// wrong password, expired or revoked look the same to the caller.
var ErrBadCredential = errs.New(CodeUnauthenticated, "valid registry credential required")

// Authenticate returns the live credential named by username whose
// password matches, or ErrBadCredential. A store failure is returned as
// is (the caller answers 503).
func (s *Service) Authenticate(ctx context.Context, username, password string) (Credential, error) {
	id, ok := strings.CutPrefix(username, UsernamePrefix)
	if !ok {
		return Credential{}, ErrBadCredential
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return Credential{}, ErrBadCredential
	}
	now := s.store.Now()
	c, cached := s.checked.get(id, now)
	epoch := s.checked.epoch.Load()
	if !cached {
		c, err = s.store.Credential(ctx, id)
		if errs.Code(err) == CodeNotFound {
			return Credential{}, ErrBadCredential
		}
		if err != nil {
			return Credential{}, err
		}
	}
	if subtle.ConstantTimeCompare([]byte(c.PasswordDigest), []byte(digest(password))) != 1 {
		return Credential{}, ErrBadCredential
	}
	if c.RevokedAt != nil || !now.Before(c.ExpiresAt) {
		return Credential{}, ErrBadCredential
	}
	if !cached {
		s.checked.put(c, now, epoch)
	}
	return c, nil
}

// Revoke ends the credential named by username when password is its own;
// otherwise ErrBadCredential.
func (s *Service) Revoke(ctx context.Context, username, password string) error {
	c, err := s.Authenticate(ctx, username, password)
	if err != nil {
		return err
	}
	if err := s.store.RevokeCredential(ctx, c.ID); err != nil {
		return err
	}
	s.checked.drop(c.ID)
	return nil
}

// CheckedCredentialTTL bounds how long a credential found live is trusted
// without asking the database again. A pull is a burst of requests with
// one credential (a manifest, its config, each layer; a client resolving
// a tag first), and the lookup was a third of keyholder's own work on a
// manifest by tag. The password and the expiry are still checked on every
// request; a revocation in this process drops the entry at once; one made
// at another keyholder behind the same database takes effect here within
// this bound.
const CheckedCredentialTTL = 5 * time.Second

// maxCheckedCredentials bounds the memory of the checked credentials;
// past it they start over.
const maxCheckedCredentials = 8192

// checkedCredentials are credentials found live, by id, until a moment.
type checkedCredentials struct {
	mu sync.Mutex
	m  map[string]checkedCredential
	// epoch counts revocations in this process: a lookup that began
	// before one does not keep what it read, which may predate it.
	epoch atomic.Uint64
}

type checkedCredential struct {
	c     Credential
	until time.Time
}

func (k *checkedCredentials) get(id string, now time.Time) (Credential, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[id]
	if !ok || !now.Before(e.until) {
		return Credential{}, false
	}
	return e.c, true
}

func (k *checkedCredentials) put(c Credential, now time.Time, epoch uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.epoch.Load() != epoch {
		return
	}
	if len(k.m) >= maxCheckedCredentials {
		clear(k.m)
	}
	k.m[c.ID] = checkedCredential{c: c, until: now.Add(CheckedCredentialTTL)}
}

func (k *checkedCredentials) drop(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch.Add(1)
	delete(k.m, id)
}

// RecordPull records that c fetched tag's manifest, whose digest is dgst.
func (s *Service) RecordPull(ctx context.Context, c Credential, tag, dgst string) error {
	return s.store.RecordPull(ctx, Pull{
		CredentialID: c.ID, AccountID: c.AccountID, Repository: c.Repository,
		Tag: tag, Digest: dgst, PulledAt: s.store.Now(),
	})
}

// MaxPulls bounds one page of Pulls.
const MaxPulls = 100

// PullPage is one page of an account's pulls, newest first. NextCursor
// asks for the page of older pulls; it is empty on the last page.
type PullPage struct {
	Pulls      []Pull
	NextCursor string
}

// Pulls lists the member's account's pulls, a page of the newest or,
// with cursor, of those older than the page that gave it. Errors:
// CodeInsufficientScope for an API key without account:read,
// CodeUnprocessable for a cursor this service did not give.
func (s *Service) Pulls(ctx context.Context, m Member, cursor string) (PullPage, error) {
	if m.Role == "api_key" && !slices.Contains(m.Scopes, scopeAccountRead) {
		return PullPage{}, errs.New(CodeInsufficientScope, "this API key's scopes do not permit reading pulls")
	}
	return s.pullPage(ctx, m.AccountID, cursor)
}

// pullPage reads one page, asking the store for one pull more than a
// page to learn whether an older page exists.
func (s *Service) pullPage(ctx context.Context, accountID, cursor string) (PullPage, error) {
	before, err := decodePullCursor(cursor)
	if err != nil {
		return PullPage{}, err
	}
	pulls, err := s.store.Pulls(ctx, accountID, before, MaxPulls+1)
	if err != nil {
		return PullPage{}, err
	}
	page := PullPage{Pulls: pulls}
	if len(pulls) > MaxPulls {
		page.Pulls = pulls[:MaxPulls]
		page.NextCursor = encodePullCursor(page.Pulls[MaxPulls-1].ID)
	}
	return page, nil
}

// Pull cursors are opaque to callers: the id of the last pull served.
func encodePullCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("pull:" + strconv.FormatInt(id, 10)))
}

func decodePullCursor(cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), "pull:"); ok {
			if id, err := strconv.ParseInt(rest, 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, &errs.Error{Code: CodeUnprocessable, Message: "cursor is not one this service gave",
		Fields: []errs.FieldError{{Field: "cursor", Code: "invalid"}}}
}

// digest is what the store keeps of a password: SHA-256 suffices because
// the password holds 256 random bits, so there is nothing to guess.
func digest(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// IsUnavailable reports whether err is the unavailable answer.
func IsUnavailable(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Code == CodeUnavailable
}
