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
)

// Scopes lists every scope an API key may carry.
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
	name, nameOK := normalizeName(in.Name)
	var f errs.Fields
	switch {
	case name == "":
		f.Add("name", RuleRequired)
	case utf8.RuneCountInString(name) > NameMax:
		f.Add("name", RuleTooLong)
	case !nameOK:
		f.Add("name", RuleInvalid)
	}
	scopes, ok := ParseScopes(in.Scopes)
	switch {
	case len(in.Scopes) == 0:
		f.Add("scopes", RuleRequired)
	case !ok:
		f.Add("scopes", RuleInvalid)
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.opts.Now()) {
		f.Add("expires_at", RuleInvalid)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return APIKey{}, err
	}
	tok, digest := newAPIKeyToken()
	k := APIKey{AccountID: p.Account.ID, Name: name, Scopes: scopes, CreatedBy: p.User.ID}
	if in.ExpiresAt != nil {
		t := in.ExpiresAt.UTC().Truncate(time.Microsecond)
		k.ExpiresAt = &t
	}
	k, err := s.store.CreateAPIKey(ctx, k, digest, p.User.ID)
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
// answers 404, as for a non-member).
func (s *Service) authenticateAPIKey(ctx context.Context, token, accountID string) (Principal, error) {
	if !ValidAPIKeyToken(token) {
		return Principal{}, ErrUnauthorized
	}
	k, a, err := s.store.AuthenticateAPIKey(ctx, TokenDigest(token))
	if err != nil {
		return Principal{}, err
	}
	p := Principal{APIKey: &k}
	if accountID != "" && accountID == k.AccountID {
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

func newAPIKeyToken() (token, digest string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, TokenDigest(token)
}
