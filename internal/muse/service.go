package muse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/seal"
)

// Service is muse's domain.
type Service struct {
	store     Store
	identity  Identity
	vault     *seal.Sealer
	providers map[string]Provider
	// echoAlias, when set, is answered by the echo provider for every
	// account (development only; the command refuses it elsewhere).
	echoAlias string
	timeout   time.Duration
	health    *health
	now       func() time.Time
	log       *slog.Logger
	// mu guards reserved: the tokens requests in flight were admitted
	// for, by account.
	mu       sync.Mutex
	reserved map[string]int64
	// keyRoles keeps identity's answers for API keys (KeyRoleTTL).
	keyRoles keyRoles
}

// Options configure a Service.
type Options struct {
	// Providers are the adapters by provider name (openai, anthropic,
	// echo).
	Providers map[string]Provider
	// EchoAlias is MUSE_ECHO_ALIAS: an alias every account has, answered
	// by the echo provider.
	EchoAlias string
	// UpstreamTimeout is MUSE_UPSTREAM_TIMEOUT, to the first byte (60 s).
	UpstreamTimeout time.Duration
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// NewService returns the domain over its store, identity, vault and
// providers.
func NewService(store Store, identity Identity, vault *seal.Sealer, o Options) *Service {
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = 60 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, identity: identity, vault: vault, providers: o.Providers, echoAlias: o.EchoAlias,
		timeout: o.UpstreamTimeout, health: newHealth(o.Now), now: o.Now, log: o.Logger, reserved: map[string]int64{}}
}

// Caller is who calls a model: an account and the user or key in it.
type Caller struct {
	AccountID string
	// ID is the user's id, or "key_" and a digest of an API key.
	ID string
}

// Actor is who manages: the account (empty for platform-wide) and the
// user.
type Actor struct {
	AccountID string
	UserID    string
}

func unauthenticated() error { return errs.New(CodeUnauthenticated, MsgUnauthenticated) }

// IsAPIKey reports whether a bearer credential is an identity API key.
func IsAPIKey(token string) bool { return strings.HasPrefix(token, "plat_") }

// keyCaller names an API key in usage rows without keeping the key.
func keyCaller(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "key_" + hex.EncodeToString(sum[:8])
}

// Invoker resolves the caller of the OpenAI-compatible routes: a user's
// token and the account the OpenAI-Organization header names, in which
// the user is a member; or an API key of that account with
// models:invoke, identity's answer for a key kept for KeyRoleTTL.
// Errors: unauthenticated, invalid_request (no account named),
// forbidden, insufficient_scope, unavailable.
func (s *Service) Invoker(ctx context.Context, token, organization string) (Caller, error) {
	if token == "" {
		return Caller{}, unauthenticated()
	}
	account, ok := ids.Parse(strings.TrimSpace(organization))
	if !ok {
		return Caller{}, errs.New(CodeInvalidRequest, "the OpenAI-Organization header must name your account's id")
	}
	c := Caller{AccountID: account}
	var (
		role   string
		scopes []string
		err    error
	)
	if IsAPIKey(token) {
		c.ID = keyCaller(token)
		role, scopes, err = s.keyRole(ctx, token, account)
	} else {
		if c.ID, err = s.identity.User(ctx, token); err != nil {
			return Caller{}, err
		}
		role, scopes, err = s.identity.AccountRole(ctx, token, account)
	}
	if err != nil {
		return Caller{}, err
	}
	if role == RoleAPIKey {
		if !IsAPIKey(token) || !slices.Contains(scopes, ScopeModelsInvoke) {
			return Caller{}, errs.New(CodeInsufficientScope, "this API key's scopes do not include models:invoke")
		}
		return c, nil
	}
	if IsAPIKey(token) || !slices.Contains([]string{RoleOwner, RoleAdmin, RoleMember}, role) {
		return Caller{}, errs.New(CodeForbidden, "you are not a member of this account")
	}
	return c, nil
}

// Manager authorizes a management call in accountID: a signed-in user
// with one of roles. API keys manage nothing. Errors: unauthenticated,
// not_found (a malformed id), forbidden, unavailable.
func (s *Service) Manager(ctx context.Context, token, accountID string, roles ...string) (Actor, error) {
	if token == "" {
		return Actor{}, unauthenticated()
	}
	account, ok := ids.Parse(accountID)
	if !ok {
		return Actor{}, errs.New(CodeNotFound, "no such account")
	}
	if IsAPIKey(token) {
		return Actor{}, errs.New(CodeForbidden, "API keys may only invoke models")
	}
	user, err := s.identity.User(ctx, token)
	if err != nil {
		return Actor{}, err
	}
	role, _, err := s.identity.AccountRole(ctx, token, account)
	if err != nil {
		return Actor{}, err
	}
	if !slices.Contains(roles, role) {
		return Actor{}, errs.New(CodeForbidden, "your role in this account may not do this")
	}
	return Actor{AccountID: account, UserID: user}, nil
}

// Operator authorizes a platform-wide call: staff only. Errors:
// unauthenticated, forbidden, unavailable.
func (s *Service) Operator(ctx context.Context, token string) (Actor, error) {
	if token == "" {
		return Actor{}, unauthenticated()
	}
	if IsAPIKey(token) {
		return Actor{}, errs.New(CodeForbidden, "platform staff only")
	}
	id, err := s.identity.Staff(ctx, token)
	if err != nil {
		return Actor{}, err
	}
	return Actor{UserID: id}, nil
}

// Writers and readers of an account's settings.
var (
	Writers = []string{RoleOwner, RoleAdmin}
	Readers = []string{RoleOwner, RoleAdmin, RoleMember}
)

// CredentialInput is a new provider credential.
type CredentialInput struct {
	Provider string
	Name     string
	BaseURL  string
	APIKey   string
}

const maxAPIKey = 4096

// CreateCredential seals and stores a provider key for the actor's
// account (or the platform's). Errors: validation_failed, name_taken.
func (s *Service) CreateCredential(ctx context.Context, a Actor, in CredentialInput) (Credential, error) {
	var f errs.Fields
	if in.Provider != ProviderOpenAI && in.Provider != ProviderAnthropic {
		f.Add("provider", "invalid")
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 64 {
		f.Add("name", "invalid")
	}
	base := strings.TrimRight(strings.TrimSpace(in.BaseURL), "/")
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			f.Add("base_url", "invalid")
		}
	}
	key := strings.TrimSpace(in.APIKey)
	if len(key) < 8 || len(key) > maxAPIKey || strings.ContainsAny(key, " \t\r\n") {
		f.Add("api_key", "invalid")
	}
	if err := f.Err(CodeValidation, "the credential has invalid fields"); err != nil {
		return Credential{}, err
	}
	c := Credential{ID: ids.New(), AccountID: a.AccountID, Provider: in.Provider, Name: name, BaseURL: base,
		LastFour: key[len(key)-4:], CreatedAt: s.now().UTC()}
	c.Sealed = s.vault.Seal(c.ID, []byte(key))
	if err := s.store.CreateCredential(ctx, c); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// Credentials lists the actor's account's credentials (never their keys).
func (s *Service) Credentials(ctx context.Context, a Actor) ([]Credential, error) {
	return s.store.Credentials(ctx, a.AccountID)
}

// DeleteCredential removes one. Errors: not_found, credential_in_use.
func (s *Service) DeleteCredential(ctx context.Context, a Actor, id string) error {
	if _, ok := ids.Parse(id); !ok {
		return errs.New(CodeNotFound, "no such provider credential")
	}
	return s.store.DeleteCredential(ctx, a.AccountID, id)
}

var aliasName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// MaxTargets bounds an alias's targets.
const MaxTargets = 8

// PutAlias writes an alias of the actor's account. Each target names a
// credential of the account or a platform-wide one. Errors:
// validation_failed.
func (s *Service) PutAlias(ctx context.Context, a Actor, name string, targets []Target) (Alias, error) {
	var f errs.Fields
	if !aliasName.MatchString(name) || name == s.echoAlias {
		f.Add("alias", "invalid")
	}
	if len(targets) == 0 || len(targets) > MaxTargets {
		f.Add("targets", "invalid")
	}
	for i, t := range targets {
		field := fmt.Sprintf("targets[%d]", i)
		if _, ok := ids.Parse(t.CredentialID); !ok {
			f.Add(field+".credential_id", "invalid")
		} else if c, err := s.store.Credential(ctx, t.CredentialID); errs.Code(err) == CodeNotFound ||
			(err == nil && c.AccountID != "" && c.AccountID != a.AccountID) {
			f.Add(field+".credential_id", "not_found")
		} else if err != nil {
			return Alias{}, err
		}
		if m := strings.TrimSpace(t.Model); m == "" || len(m) > 128 {
			f.Add(field+".model", "invalid")
		}
		if t.Weight < 0 || t.Weight > 1000 {
			f.Add(field+".weight", "invalid")
		}
	}
	if err := f.Err(CodeValidation, "the alias has invalid fields"); err != nil {
		return Alias{}, err
	}
	al := Alias{AccountID: a.AccountID, Name: name, Targets: targets}
	if err := s.store.PutAlias(ctx, al); err != nil {
		return Alias{}, err
	}
	return s.store.Alias(ctx, a.AccountID, name)
}

// Alias returns one of the actor's account's aliases. Errors: not_found.
func (s *Service) Alias(ctx context.Context, a Actor, name string) (Alias, error) {
	return s.store.Alias(ctx, a.AccountID, name)
}

// Aliases lists the account's aliases.
func (s *Service) Aliases(ctx context.Context, a Actor) ([]Alias, error) {
	return s.store.Aliases(ctx, a.AccountID)
}

// DeleteAlias removes one. Errors: not_found.
func (s *Service) DeleteAlias(ctx context.Context, a Actor, name string) error {
	return s.store.DeleteAlias(ctx, a.AccountID, name)
}

// Models lists the model names a caller may use: the account's aliases,
// and the echo alias where it is configured.
func (s *Service) Models(ctx context.Context, c Caller) ([]Alias, error) {
	as, err := s.store.Aliases(ctx, c.AccountID)
	if err != nil {
		return nil, err
	}
	if s.echoAlias != "" {
		as = append([]Alias{{AccountID: c.AccountID, Name: s.echoAlias}}, as...)
	}
	return as, nil
}

// MaxMonthlyTokens bounds a budget.
const MaxMonthlyTokens = int64(1) << 50

// SetBudget sets the account's monthly budget; 0 removes it. Errors:
// validation_failed.
func (s *Service) SetBudget(ctx context.Context, a Actor, monthly int64) (Budget, error) {
	if monthly < 0 || monthly > MaxMonthlyTokens {
		return Budget{}, &errs.Error{Code: CodeValidation, Message: "monthly_tokens must be between 0 and 2^50",
			Fields: []errs.FieldError{{Field: "monthly_tokens", Code: "invalid"}}}
	}
	if err := s.store.SetBudget(ctx, a.AccountID, monthly); err != nil {
		return Budget{}, err
	}
	return s.Budget(ctx, a)
}

// Budget returns the account's budget and this month's tokens.
func (s *Service) Budget(ctx context.Context, a Actor) (Budget, error) {
	return s.store.Budget(ctx, a.AccountID, month(s.now()))
}

func month(t time.Time) string { return t.UTC().Format("2006-01") }

// MaxUsageRange bounds a usage query.
const MaxUsageRange = 366 * 24 * time.Hour

// Usage sums the account's usage by day and alias over [from, to). Errors:
// validation_failed.
func (s *Service) Usage(ctx context.Context, a Actor, from, to time.Time) ([]UsageSum, error) {
	if !from.Before(to) || to.Sub(from) > MaxUsageRange {
		return nil, &errs.Error{Code: CodeValidation, Message: "from must be before to, at most 366 days apart",
			Fields: []errs.FieldError{{Field: "to", Code: "invalid"}}}
	}
	return s.store.UsageSums(ctx, a.AccountID, from, to)
}

// openCredential returns a target's key. Errors: not_found (the
// credential is gone), provider_credential_unreadable.
func (s *Service) openCredential(c Credential) (string, error) {
	key, err := s.vault.Open(c.ID, c.Sealed)
	if err != nil {
		return "", errs.New(CodeCredentialUnreadable, fmt.Sprintf(
			"the provider credential %q (%s) can no longer be read (the vault key changed); store it again", c.Name, c.ID))
	}
	return string(key), nil
}

var errNoTarget = errors.New("no target")
