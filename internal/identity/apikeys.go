package identity

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// APIKeyPrefix starts every API key, so any component tells one from a
// JWT without parsing (the gateway passes it through unverified).
const APIKeyPrefix = "plat_"

// apiKeyLen is the whole token's length: the prefix and 32 random bytes
// in unpadded base64url (43 characters).
const apiKeyLen = len(APIKeyPrefix) + 43

// RoleAPIKey is the role an API key has in its own account's answer; it
// ranks below every member role, so no role check ever admits it.
const RoleAPIKey Role = "api_key"

// The closed set of API key scopes.
const (
	ScopeAccountRead      = "account:read"
	ScopeEntitlementsRead = "entitlements:read"
	ScopeArtifactsFetch   = "artifacts:fetch"
	ScopeReleasesRead     = "releases:read"
	ScopeReleasesApprove  = "releases:approve"
	// ScopeProjectsWrite lets a key publish, change and delete its
	// account's projects in pantry (pantry.md section 1).
	ScopeProjectsWrite = "projects:write"
	// ScopeInstallationsWrite lets a key activate its account's
	// installations, report their heartbeats and renew their licence
	// files at box: what the customer's installed software holds.
	ScopeInstallationsWrite = "installations:write"
	// ScopeModelsInvoke lets a key call models through muse's
	// OpenAI-compatible routes (muse.md section 1).
	ScopeModelsInvoke = "models:invoke"
	// ScopeReleasesPublish lets a staff key publish releases at box from a
	// release pipeline (licensing.md section 4). Only staff issue it
	// (CreateStaffAPIKey), never an account's admin, and no route but
	// publishing a release accepts it.
	ScopeReleasesPublish = "releases:publish"
)

// Scopes lists every scope an account's admin may give a key; a staff
// key's scope, ScopeReleasesPublish, is not among them.
func Scopes() []string {
	return []string{ScopeAccountRead, ScopeEntitlementsRead, ScopeArtifactsFetch, ScopeReleasesRead, ScopeReleasesApprove, ScopeProjectsWrite, ScopeInstallationsWrite, ScopeModelsInvoke}
}

// MinRoleAPIKeys is who manages an account's API keys.
const MinRoleAPIKeys = RoleAdmin

// APIKeyUseGranularity is how stale last_used_at may be: a request writes
// it only when it is older, so authenticated reads stay reads.
const APIKeyUseGranularity = time.Minute

// CodeInsufficientScope refuses an API key outside its scopes (403).
const CodeInsufficientScope = "insufficient_scope"

var (
	ErrInsufficientScope = errs.New(CodeInsufficientScope, "this API key's scopes do not permit this request")
	ErrAPIKeyNotFound    = errs.New(CodeNotFound, "no such API key in this account")
)

// APIKey is a scoped bearer token acting for one account. Token is set
// only in the answer that creates it; the store keeps a digest.
type APIKey struct {
	ID         string
	AccountID  string
	Name       string
	Scopes     []string
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	Token      string
}

// HasScope reports whether k carries scope.
func (k *APIKey) HasScope(scope string) bool { return k != nil && slices.Contains(k.Scopes, scope) }

// APIKeyStore persists API keys.
type APIKeyStore interface {
	// CreateAPIKey stores k under digest, re-reading that by is still an
	// admin, and emits identity.api_key.created. Errors:
	// ErrRoleForbidden, ErrAccountNotFound.
	CreateAPIKey(ctx context.Context, k APIKey, digest, by string) (APIKey, error)
	// ListAPIKeys returns accountID's keys that are not revoked, oldest
	// first.
	ListAPIKeys(ctx context.Context, accountID string) ([]APIKey, error)
	// RevokeAPIKey revokes a live key of accountID by one conditional
	// UPDATE and emits identity.api_key.revoked. Errors:
	// ErrAPIKeyNotFound, ErrRoleForbidden, ErrAccountNotFound.
	RevokeAPIKey(ctx context.Context, accountID, keyID, by string) error
	// AuthenticateAPIKey resolves a live (unrevoked, unexpired) key by its
	// digest, with its account, and refreshes last_used_at when older
	// than APIKeyUseGranularity. Errors: ErrUnauthorized.
	AuthenticateAPIKey(ctx context.Context, digest string) (APIKey, Account, error)
}

// CreateAPIKeyInput is a request for a key.
type CreateAPIKeyInput struct {
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
}

// CreateAPIKey issues a key for the caller's account (admin). Errors:
// CodeValidation (name required/too_long/invalid; scopes required/invalid;
// expires_at invalid when not in the future), CodeForbidden.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, in CreateAPIKeyInput) (APIKey, error) {
	if err := Authorize(p, MinRoleAPIKeys); err != nil {
		return APIKey{}, err
	}
	name, f := keyName(in.Name)
	scopes, ok := ParseScopes(in.Scopes)
	switch {
	case len(in.Scopes) == 0:
		f.Add("scopes", RuleRequired)
	case !ok:
		f.Add("scopes", RuleInvalid)
	}
	s.checkExpiry(&f, in.ExpiresAt)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return APIKey{}, err
	}
	return s.issueKey(ctx, APIKey{AccountID: p.Account.ID, Name: name, Scopes: scopes, CreatedBy: p.User.ID}, in.ExpiresAt)
}

// keyName checks a key's name and returns it normalized, with the field
// at fault.
func keyName(rawName string) (string, errs.Fields) {
	name, nameOK := normalizeName(rawName)
	var f errs.Fields
	switch {
	case name == "":
		f.Add("name", RuleRequired)
	case utf8.RuneCountInString(name) > NameMax:
		f.Add("name", RuleTooLong)
	case !nameOK:
		f.Add("name", RuleInvalid)
	}
	return name, f
}

// checkExpiry adds expires_at to f unless it is absent or in the future.
func (s *Service) checkExpiry(f *errs.Fields, expiresAt *time.Time) {
	if expiresAt != nil && !expiresAt.After(s.opts.Now()) {
		f.Add("expires_at", RuleInvalid)
	}
}

// issueKey stores k, made by k.CreatedBy, with a new token and returns it
// with the token, which only this answer carries.
func (s *Service) issueKey(ctx context.Context, k APIKey, expiresAt *time.Time) (APIKey, error) {
	tok, digest := newAPIKeyToken()
	if expiresAt != nil {
		t := expiresAt.UTC().Truncate(time.Microsecond)
		k.ExpiresAt = &t
	}
	k, err := s.store.CreateAPIKey(ctx, k, digest, k.CreatedBy)
	if err != nil {
		return APIKey{}, err
	}
	k.Token = tok
	return k, nil
}

// ListAPIKeys lists the account's live keys (admin), never their tokens.
func (s *Service) ListAPIKeys(ctx context.Context, p Principal) ([]APIKey, error) {
	if err := Authorize(p, MinRoleAPIKeys); err != nil {
		return nil, err
	}
	return s.store.ListAPIKeys(ctx, p.Account.ID)
}

// RevokeAPIKey revokes a key of the caller's account (admin); it stops
// authenticating at once. Errors: CodeNotFound, CodeForbidden.
func (s *Service) RevokeAPIKey(ctx context.Context, p Principal, keyID string) error {
	if err := Authorize(p, MinRoleAPIKeys); err != nil {
		return err
	}
	if !ids.Valid(keyID) {
		return ErrAPIKeyNotFound
	}
	return s.store.RevokeAPIKey(ctx, p.Account.ID, keyID, p.User.ID)
}

// authenticateAPIKey resolves an API key. Its principal has no user; on
// an account route it is the key's account (with RoleAPIKey) when the
// route names that account, and no account otherwise (so the route
// answers 404, as for a non-member). A releases:publish key has no
// account on any route.
func (s *Service) authenticateAPIKey(ctx context.Context, token, accountID string) (Principal, error) {
	if !ValidAPIKeyToken(token) {
		return Principal{}, ErrUnauthorized
	}
	k, a, err := s.store.AuthenticateAPIKey(ctx, TokenDigest(token))
	if err != nil {
		return Principal{}, err
	}
	p := Principal{APIKey: &k}
	// A publishing key acts on no account's routes: its account is where
	// it is kept, not what it may read.
	if accountID != "" && accountID == k.AccountID && !k.HasScope(ScopeReleasesPublish) {
		a.Role = RoleAPIKey
		p.Account = &a
	}
	return p, nil
}

// ValidAPIKeyToken reports whether token has an API key's form: the
// prefix and 43 base64url characters.
func ValidAPIKeyToken(token string) bool {
	if len(token) != apiKeyLen || !strings.HasPrefix(token, APIKeyPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(token[len(APIKeyPrefix):])
	return err == nil
}

// ParseScopes checks scopes against the closed set and returns them
// deduplicated in the set's order.
func ParseScopes(in []string) ([]string, bool) {
	var out []string
	for _, sc := range Scopes() {
		if slices.Contains(in, sc) {
			out = append(out, sc)
		}
	}
	for _, sc := range in {
		if !slices.Contains(out, sc) {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// StaffAPIKeyInput is a staff member's request for a publishing key.
type StaffAPIKeyInput struct {
	// AccountID is the company's own account the key belongs to; the
	// staff member must be an admin of it.
	AccountID string
	Name      string
	ExpiresAt *time.Time
}

// StaffAPIKeyStore persists staff keys: rows of api_keys whose only
// scope is ScopeReleasesPublish, which the account routes neither list
// nor revoke.
type StaffAPIKeyStore interface {
	// StaffAPIKeys returns every live publishing key, oldest first.
	StaffAPIKeys(ctx context.Context) ([]APIKey, error)
	// RevokeStaffAPIKey revokes a live publishing key by one conditional
	// UPDATE and emits identity.api_key.revoked. Errors: ErrAPIKeyNotFound.
	RevokeStaffAPIKey(ctx context.Context, keyID, by string) error
}

// CreateStaffAPIKey issues a releases:publish key, so a release pipeline
// publishes without a person's session (decision 0025). The
// caller must be staff and an admin of in.AccountID, the company's own
// account; the key stops working when it is revoked, when its creator
// stops being an admin of that account or stops being staff. Errors:
// ErrNotStaff, CodeValidation (name, expires_at), CodeNotFound (no such
// account or not a member), CodeForbidden (a member below admin).
func (s *Service) CreateStaffAPIKey(ctx context.Context, p Principal, in StaffAPIKeyInput) (APIKey, error) {
	if p.APIKey != nil || !p.User.Staff {
		return APIKey{}, ErrNotStaff
	}
	name, f := keyName(in.Name)
	if in.AccountID == "" {
		f.Add("account_id", RuleRequired)
	}
	s.checkExpiry(&f, in.ExpiresAt)
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return APIKey{}, err
	}
	accountID, ok := ids.Parse(in.AccountID)
	if !ok {
		return APIKey{}, ErrAccountNotFound
	}
	return s.issueKey(ctx, APIKey{AccountID: accountID, Name: name, Scopes: []string{ScopeReleasesPublish}, CreatedBy: p.User.ID}, in.ExpiresAt)
}

// StaffAPIKeys lists every live publishing key for staff, never their
// tokens. Errors: ErrNotStaff.
func (s *Service) StaffAPIKeys(ctx context.Context, p Principal) ([]APIKey, error) {
	if p.APIKey != nil || !p.User.Staff {
		return nil, ErrNotStaff
	}
	return s.store.StaffAPIKeys(ctx)
}

// RevokeStaffAPIKey revokes a publishing key; any staff member may, not
// only its creator. Errors: ErrNotStaff, CodeNotFound.
func (s *Service) RevokeStaffAPIKey(ctx context.Context, p Principal, keyID string) error {
	if p.APIKey != nil || !p.User.Staff {
		return ErrNotStaff
	}
	id, ok := ids.Parse(keyID)
	if !ok {
		return ErrAPIKeyNotFound
	}
	return s.store.RevokeStaffAPIKey(ctx, id, p.User.ID)
}

// Publisher is who may publish a release: a staff member's session, or a
// live releases:publish key acting on its creator's authority.
type Publisher struct {
	// UserID is the staff member: the session's user or the key's creator.
	UserID string
	// APIKeyID is the key's id; empty for a session.
	APIKeyID string
}

// Publisher resolves token for box's release publishing. Errors:
// ErrUnauthorized, ErrNotStaff (a person who is not staff), and
// ErrInsufficientScope (a key without ScopeReleasesPublish).
func (s *Service) Publisher(ctx context.Context, token string) (Publisher, error) {
	p, err := s.Authenticate(ctx, token, "")
	if err != nil {
		return Publisher{}, err
	}
	if p.APIKey != nil {
		if !p.APIKey.HasScope(ScopeReleasesPublish) {
			return Publisher{}, ErrInsufficientScope
		}
		return Publisher{UserID: p.APIKey.CreatedBy, APIKeyID: p.APIKey.ID}, nil
	}
	if !p.User.Staff {
		return Publisher{}, ErrNotStaff
	}
	return Publisher{UserID: p.User.ID}, nil
}

func newAPIKeyToken() (token, digest string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, TokenDigest(token)
}
