// Package muse routes an account's chat completions to model providers
// through one OpenAI-compatible endpoint (muse.md): the vault of provider
// credentials, sealed with MUSE_VAULT_KEY; aliases with ordered, weighted
// targets and failover before the first byte; metering of every
// completion into a usage row and a muse.tokens.consumed event; monthly
// budgets. It knows no SQL and no HTTP: the Store is sqlstore's, Identity
// is identity's client, the providers are adapters behind Provider.
package muse

import (
	"context"
	"time"
)

// The error codes muse answers with; httpapi maps each to one status.
const (
	CodeUnauthenticated      = "unauthenticated"                // 401
	CodeCredentialUnreadable = "provider_credential_unreadable" // 401: the vault key changed under it
	CodeForbidden            = "forbidden"                      // 403: a role that may not
	CodeInsufficientScope    = "insufficient_scope"             // 403: an API key without models:invoke
	CodeNotFound             = "not_found"                      // 404
	CodeModelNotFound        = "model_not_found"                // 404: no such alias for the account
	CodeNameTaken            = "name_taken"                     // 409
	CodeCredentialInUse      = "credential_in_use"              // 409: an alias still routes to it
	CodeInvalidRequest       = "invalid_request"                // 400: not a chat request
	CodeValidation           = "validation_failed"              // 422: field errors
	CodeBudgetExhausted      = "budget_exhausted"               // 429
	CodeUpstreamFailed       = "upstream_failed"                // 502: every target failed
	CodeUnavailable          = "unavailable"                    // 503
)

// Messages for codes several places answer with.
const (
	MsgUnauthenticated = "a valid identity access token or API key is required"
	MsgUnavailable     = "a service muse depends on is unavailable; try again shortly"
)

// Roles identity reports, and the API key scope that invokes models.
const (
	RoleOwner          = "owner"
	RoleAdmin          = "admin"
	RoleMember         = "member"
	RoleAPIKey         = "api_key"
	ScopeModelsInvoke  = "models:invoke"
	OrganizationHeader = "OpenAI-Organization"
)

// Providers muse speaks to.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderEcho      = "echo"
)

// Credential is one provider key in the vault. AccountID is empty for a
// platform-wide credential (staff's); Sealed is the key sealed with the
// vault key and the credential's id; LastFour is all of it ever shown.
type Credential struct {
	ID        string
	AccountID string
	Provider  string
	Name      string
	BaseURL   string
	Sealed    []byte
	LastFour  string
	CreatedAt time.Time
}

// Target is one place an alias routes to: a credential and the model
// name the upstream knows. Weight shares the first attempt among the
// targets that have one; with no weights the first target goes first.
type Target struct {
	CredentialID string
	Model        string
	Weight       int
}

// Alias is a model name an account's callers use.
type Alias struct {
	AccountID string
	Name      string
	Targets   []Target
	UpdatedAt time.Time
}

// Usage statuses: the completion finished, the client left before the
// end, or the upstream failed after the first byte.
const (
	StatusOK             = "ok"
	StatusClientClosed   = "client_closed"
	StatusUpstreamFailed = "upstream_failed"
)

// Usage is one metered completion (muse.md section 4).
type Usage struct {
	ID               string
	AccountID        string
	Caller           string
	Alias            string
	Provider         string
	UpstreamModel    string
	PromptTokens     int64
	CompletionTokens int64
	Estimated        bool
	LatencyMS        int64
	Status           string
	CreatedAt        time.Time
}

// Budget is an account's monthly token budget and what the month used.
// Monthly is 0 when the account has none.
type Budget struct {
	Monthly int64
	Used    int64
}

// Plan is what a completion needs before its upstream is called.
type Plan struct {
	Budget Budget
	// Found reports that the alias exists; Alias is it with its targets.
	Found bool
	Alias Alias
	// Credentials are the targets' credentials, by id.
	Credentials map[string]Credential
}

// UsageSum is one day's tokens through one alias.
type UsageSum struct {
	Day              string // YYYY-MM-DD, UTC
	Alias            string
	Requests         int64
	PromptTokens     int64
	CompletionTokens int64
}

// Store is muse's persistence (sqlstore implements it on both engines).
type Store interface {
	// CreateCredential inserts c. Errors: name_taken.
	CreateCredential(ctx context.Context, c Credential) error
	// Credential returns the credential id. Errors: not_found.
	Credential(ctx context.Context, id string) (Credential, error)
	// Credentials lists accountID's credentials ("" for the platform's),
	// by name.
	Credentials(ctx context.Context, accountID string) ([]Credential, error)
	// DeleteCredential removes accountID's credential id. Errors:
	// not_found, credential_in_use (an alias routes to it).
	DeleteCredential(ctx context.Context, accountID, id string) error
	// PutAlias writes a, replacing its targets. Errors: validation_failed
	// (a target's credential is gone).
	PutAlias(ctx context.Context, a Alias) error
	// Alias returns accountID's alias name. Errors: not_found.
	Alias(ctx context.Context, accountID, name string) (Alias, error)
	// Aliases lists accountID's aliases by name.
	Aliases(ctx context.Context, accountID string) ([]Alias, error)
	// DeleteAlias removes an alias. Errors: not_found.
	DeleteAlias(ctx context.Context, accountID, name string) error
	// SetBudget sets accountID's monthly budget; 0 removes it.
	SetBudget(ctx context.Context, accountID string, monthly int64) error
	// Budget returns accountID's budget and the tokens of month (YYYY-MM).
	Budget(ctx context.Context, accountID, month string) (Budget, error)
	// Plan reads, in one round trip, accountID's budget with the tokens
	// of month and the alias name with its targets' credentials.
	Plan(ctx context.Context, accountID, month, alias string) (Plan, error)
	// RecordUsage writes u, adds its tokens to its month's total and
	// writes ev to the outbox, in one transaction.
	RecordUsage(ctx context.Context, u Usage, ev Event) error
	// UsageSums sums accountID's usage by day and alias over [from, to).
	UsageSums(ctx context.Context, accountID string, from, to time.Time) ([]UsageSum, error)
}

// Identity answers who a caller is (identity's key set and API).
type Identity interface {
	// User returns the user a signed-in token belongs to. Errors:
	// unauthenticated, unavailable.
	User(ctx context.Context, token string) (string, error)
	// AccountRole returns the caller's role in accountID and an API key's
	// scopes. Errors: unauthenticated, forbidden (not a member),
	// unavailable.
	AccountRole(ctx context.Context, token, accountID string) (string, []string, error)
	// Staff returns the user id of a staff token. Errors:
	// unauthenticated, forbidden, unavailable.
	Staff(ctx context.Context, token string) (string, error)
}
