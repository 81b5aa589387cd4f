package identity

import (
	"context"
	"crypto/subtle"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/platformco/platform/internal/errs"
)

// OIDC grant types and scopes a relying party may register: closed sets.
var (
	OIDCGrantTypes = []string{"authorization_code", "refresh_token"}
	OIDCScopes     = []string{"openid", "email", "profile", "offline_access", "accounts"}
)

// OIDC lifetimes.
const (
	OIDCAuthRequestTTL = 10 * time.Minute
	OIDCAccessTokenTTL = 15 * time.Minute
	OIDCRefreshTTL     = 30 * 24 * time.Hour
	oidcRedirectURIMax = 20
	oidcRedirectURILen = 2000
)

// OIDC errors.
var (
	ErrOIDCClientNotFound = errs.New(CodeNotFound, "no such OIDC client in this account")
	// ErrOIDCGrantUnknown is an authorization request, code or token that
	// is unknown, expired, used or revoked: one answer for all.
	ErrOIDCGrantUnknown = errs.New(CodeUnauthorized, "the grant is unknown, expired, used or revoked")
	// ErrOIDCGrantReused is a code or rotated refresh token presented a
	// second time; the store has revoked what the grant issued.
	ErrOIDCGrantReused = errs.New(CodeUnauthorized, "the grant was already used; every token it issued is revoked")
	// ErrOIDCConsentRequired is a request answered without a page whose
	// scopes the user's remembered consent does not cover.
	ErrOIDCConsentRequired = errs.New(CodeForbidden, "the user has not allowed every scope the application asks for")
	ErrOIDCConsentNotFound = errs.New(CodeNotFound, "you have not connected this application")
)

// OIDCClient is a relying party registered by an account's admin.
type OIDCClient struct {
	ID           string
	AccountID    string
	Name         string
	Public       bool
	RedirectURIs []string
	GrantTypes   []string
	Scopes       []string
	CreatedBy    string
	CreatedAt    time.Time
	RevokedAt    *time.Time
}

// OIDCAuthRequest is an authorization request between the authorization
// endpoint and the code's redemption.
type OIDCAuthRequest struct {
	ID            string
	ClientID      string
	RedirectURI   string
	Scopes        []string
	State         string
	Nonce         string
	ResponseType  string
	ResponseMode  string
	CodeChallenge string // S256 only
	UserID        string
	SessionID     string
	AuthTime      time.Time
	Done          bool
	// Prompt is the request's prompt parameter as given ("" when absent).
	Prompt string
	// MaxAge is the oldest sign-in (in seconds) the request accepts; 0
	// for prompt=login, nil when it accepts any.
	MaxAge    *uint
	CreatedAt time.Time
	ExpiresAt time.Time
}

// OIDCToken is an access or refresh token as stored (never its secret).
type OIDCToken struct {
	ID            string
	Kind          string // "access" or "refresh"
	ClientID      string
	UserID        string
	FamilyID      string
	AuthRequestID string
	Scopes        []string
	AuthTime      time.Time
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// OIDCConsent is what a user allowed a client: the union of the scopes
// of every request they allowed since they last withdrew it.
type OIDCConsent struct {
	ClientID   string
	ClientName string
	Scopes     []string
	GrantedAt  time.Time
	UpdatedAt  time.Time
}

// Covers reports whether the consent grants every one of scopes.
func (c OIDCConsent) Covers(scopes []string) bool { return subset(scopes, c.Scopes) }

// OIDCUser is what the provider's claims are made of.
type OIDCUser struct {
	User     User
	Accounts []Account // with the user's role in each
}

// OIDCStore persists the provider's state. Methods that change state do
// it in one transaction.
type OIDCStore interface {
	// CreateOIDCClient stores a client (secretDigest empty for a public
	// one) and its created event. Errors: ErrRoleForbidden,
	// ErrAccountNotFound (by is no longer an admin of the account).
	CreateOIDCClient(ctx context.Context, c OIDCClient, secretDigest string) (OIDCClient, error)
	// ListOIDCClients returns an account's clients, revoked ones included,
	// oldest first.
	ListOIDCClients(ctx context.Context, accountID string) ([]OIDCClient, error)
	// RevokeOIDCClient stops honouring a client, revokes every token
	// issued to it and forgets every consent to it, in one transaction;
	// the row is kept. Errors:
	// ErrOIDCClientNotFound (also when already revoked), ErrRoleForbidden.
	RevokeOIDCClient(ctx context.Context, accountID, clientID, by string) error
	// OIDCClient returns a client and its secret digest, revoked or not.
	// Errors: ErrOIDCClientNotFound.
	OIDCClient(ctx context.Context, clientID string) (OIDCClient, string, error)

	// CreateOIDCAuthRequest stores a new authorization request.
	CreateOIDCAuthRequest(ctx context.Context, r OIDCAuthRequest) error
	// OIDCAuthRequest returns a live request. Errors: ErrOIDCGrantUnknown.
	OIDCAuthRequest(ctx context.Context, id string) (OIDCAuthRequest, error)
	// SignInOIDCAuthRequest records who signed in for a request not yet
	// signed in, and when they signed in (the session's sign-in, the ID
	// token's auth_time). Errors: ErrOIDCGrantUnknown.
	SignInOIDCAuthRequest(ctx context.Context, id, userID, sessionID string, authTime time.Time) error
	// OIDCSessionSignedIn is when a live session signed in. Errors:
	// ErrUnauthorized.
	OIDCSessionSignedIn(ctx context.Context, sessionID string) (time.Time, error)
	// ConsentOIDCAuthRequest marks a signed-in request done and adds its
	// scopes to the user's consent for its client (one row per user and
	// client, created by the first), in one transaction. Errors:
	// ErrOIDCGrantUnknown.
	ConsentOIDCAuthRequest(ctx context.Context, id, userID string) error
	// ResumeOIDCAuthRequest binds a request nobody answered to the user's
	// session and marks it done on the strength of the user's remembered
	// consent, in one transaction: no page is shown. Errors:
	// ErrOIDCGrantUnknown, ErrOIDCConsentRequired (no consent, or one not
	// covering the request's scopes).
	ResumeOIDCAuthRequest(ctx context.Context, id, userID, sessionID string, authTime time.Time) error
	// OIDCConsent is the user's consent for a live client. Errors:
	// ErrOIDCConsentNotFound.
	OIDCConsent(ctx context.Context, userID, clientID string) (OIDCConsent, error)
	// ListOIDCConsents is the user's consents to live clients, the most
	// recently updated first.
	ListOIDCConsents(ctx context.Context, userID string) ([]OIDCConsent, error)
	// WithdrawOIDCConsent forgets the user's consent for a client and, in
	// the same transaction, revokes every token of the user for it and
	// stops the codes not yet redeemed. Errors: ErrOIDCConsentNotFound.
	WithdrawOIDCConsent(ctx context.Context, userID, clientID string) error
	// SaveOIDCCode attaches the digest of the issued code to a done request.
	SaveOIDCCode(ctx context.Context, id, codeDigest string) error
	// OIDCAuthRequestByCode reads the request of a live code and its
	// client with the client's secret digest (as OIDCClient), in one read
	// that writes nothing. A code already redeemed (or burnt) is a second
	// use: every token the first issued is revoked and it answers
	// ErrOIDCGrantReused. Errors: ErrOIDCGrantUnknown, ErrOIDCGrantReused.
	OIDCAuthRequestByCode(ctx context.Context, codeDigest string) (OIDCAuthRequest, OIDCClient, string, error)
	// RedeemOIDCCode consumes request id's code and stores the tokens it
	// issues (access, and refresh under refreshDigest when not nil) in one
	// statement, committed with whatever writes run beside it. Of any
	// number of concurrent redemptions exactly one succeeds; the others
	// are second uses, handled as OIDCAuthRequestByCode does. A revoked
	// client, a disabled user, or a code burnt or expired, gets nothing:
	// ErrOIDCGrantUnknown. Errors: ErrOIDCGrantUnknown, ErrOIDCGrantReused.
	RedeemOIDCCode(ctx context.Context, id string, access OIDCToken, refresh *OIDCToken, refreshDigest string) error
	// BurnOIDCCode consumes request id's code without issuing anything:
	// an exchange refused after the code was read (a wrong PKCE verifier)
	// still spends it.
	BurnOIDCCode(ctx context.Context, id string) error

	// RotateOIDCTokens retires the refresh token of digest rotate by one
	// conditional UPDATE and stores its successors (refresh under
	// refreshDigest). A refresh token already retired revokes its whole
	// family and answers ErrOIDCGrantReused. A revoked client gets
	// nothing: ErrOIDCGrantUnknown.
	RotateOIDCTokens(ctx context.Context, access, refresh OIDCToken, refreshDigest, rotate string) error
	// OIDCRefreshToken returns the live refresh token with digest. A
	// retired one revokes its family and answers ErrOIDCGrantReused.
	// Errors: ErrOIDCGrantUnknown, ErrOIDCGrantReused.
	OIDCRefreshToken(ctx context.Context, digest string) (OIDCToken, error)
	// OIDCAccessToken returns a live access token of a live client and
	// its user (not disabled), in one read: userinfo's whole lookup.
	// Errors: ErrOIDCGrantUnknown.
	OIDCAccessToken(ctx context.Context, id string) (OIDCToken, User, error)
	// RevokeOIDCToken revokes clientID's access token id, or, for a
	// refresh token, its whole family (the access tokens issued with it
	// too). An unknown id is not an error (RFC 7009).
	RevokeOIDCToken(ctx context.Context, id, clientID string) error
	// RevokeOIDCUserClient revokes every token of userID for clientID.
	RevokeOIDCUserClient(ctx context.Context, userID, clientID string) error
	// OIDCUser returns a user and, withAccounts, their accounts (else
	// none are read). Errors: ErrUserNotFound.
	OIDCUser(ctx context.Context, userID string, withAccounts bool) (OIDCUser, error)
}

// RegisterOIDCClientInput is a registration request.
type RegisterOIDCClientInput struct {
	Name         string
	RedirectURIs []string
	GrantTypes   []string
	Scopes       []string
	Public       bool
}

// RegisterOIDCClient registers a relying party for the caller's account
// (admin) and returns it with its secret (empty for a public client),
// shown only here. Errors: CodeValidation (name, redirect_uris,
// grant_types, scopes), ErrRoleForbidden, ErrAccountNotFound.
func RegisterOIDCClient(ctx context.Context, store OIDCStore, p Principal, in RegisterOIDCClientInput) (OIDCClient, string, error) {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return OIDCClient{}, "", err
	}
	name, nameOK := normalizeName(in.Name)
	var f errs.Fields
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		f.Add("name", RuleRequired)
	case n > NameMax:
		f.Add("name", RuleTooLong)
	case !nameOK:
		f.Add("name", RuleInvalid)
	}
	switch {
	case len(in.RedirectURIs) == 0:
		f.Add("redirect_uris", RuleRequired)
	case len(in.RedirectURIs) > oidcRedirectURIMax:
		f.Add("redirect_uris", RuleTooLarge)
	default:
		for _, u := range in.RedirectURIs {
			if !validRedirectURI(u) {
				f.Add("redirect_uris", RuleInvalid)
				break
			}
		}
	}
	grants := in.GrantTypes
	if len(grants) == 0 {
		grants = []string{"authorization_code"}
	}
	if !subset(grants, OIDCGrantTypes) || !slices.Contains(grants, "authorization_code") {
		f.Add("grant_types", RuleInvalid)
	}
	scopes := in.Scopes
	if len(scopes) == 0 {
		scopes = []string{"openid"}
	}
	if !subset(scopes, OIDCScopes) || !slices.Contains(scopes, "openid") {
		f.Add("scopes", RuleInvalid)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return OIDCClient{}, "", err
	}
	c := OIDCClient{
		AccountID: p.Account.ID, Name: name, Public: in.Public,
		RedirectURIs: dedupe(in.RedirectURIs), GrantTypes: dedupe(grants), Scopes: dedupe(scopes),
		CreatedBy: p.User.ID,
	}
	secret, digest := "", ""
	if !in.Public {
		secret, digest = newToken()
	}
	c, err := store.CreateOIDCClient(ctx, c, digest)
	if err != nil {
		return OIDCClient{}, "", err
	}
	return c, secret, nil
}

// ListOIDCClients lists the caller's account's clients (admin).
func ListOIDCClients(ctx context.Context, store OIDCStore, p Principal) ([]OIDCClient, error) {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return nil, err
	}
	return store.ListOIDCClients(ctx, p.Account.ID)
}

// RevokeOIDCClient deletes a client of the caller's account (admin): its
// tokens are revoked with it. Errors: ErrOIDCClientNotFound,
// ErrRoleForbidden, ErrAccountNotFound.
func RevokeOIDCClient(ctx context.Context, store OIDCStore, p Principal, clientID string) error {
	if err := Authorize(p, MinRoleInvite); err != nil {
		return err
	}
	return store.RevokeOIDCClient(ctx, p.Account.ID, clientID, p.User.ID)
}

// ListOIDCConsents lists the applications the caller (a person's
// session) has allowed.
func ListOIDCConsents(ctx context.Context, store OIDCStore, p Principal) ([]OIDCConsent, error) {
	return store.ListOIDCConsents(ctx, p.User.ID)
}

// WithdrawOIDCConsent disconnects an application from the caller: their
// consent is forgotten and its tokens for them revoked, so its next
// request asks again. Errors: ErrOIDCConsentNotFound.
func WithdrawOIDCConsent(ctx context.Context, store OIDCStore, p Principal, clientID string) error {
	return store.WithdrawOIDCConsent(ctx, p.User.ID, clientID)
}

// validRedirectURI admits an absolute https URL, or http on a loopback
// host (native and development clients), without a fragment. Matching is
// exact, so nothing is normalised.
func validRedirectURI(raw string) bool {
	if raw == "" || len(raw) > oidcRedirectURILen || strings.ContainsAny(raw, " \t\r\n\x00#") {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.String() != raw {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		return h == "localhost" || h == "127.0.0.1" || h == "::1"
	}
	return false
}

func subset(xs, allowed []string) bool {
	for _, x := range xs {
		if !slices.Contains(allowed, x) {
			return false
		}
	}
	return true
}

func dedupe(xs []string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// OIDCClientCreated is the fact of a relying party's registration.
func OIDCClientCreated(c OIDCClient) Event {
	return Event{EventOIDCClientCreated, c.ID, oidcClientCreated{c.ID, c.AccountID, c.Name, c.Public, c.RedirectURIs, c.GrantTypes, c.Scopes, c.CreatedBy}}
}

// OIDCClientRevoked is the fact of a relying party's deletion.
func OIDCClientRevoked(accountID, clientID, by string) Event {
	return Event{EventOIDCClientRevoked, clientID, oidcClientRevoked{clientID, accountID, by}}
}

// The OIDC event types.
const (
	EventOIDCClientCreated = "identity.oidc_client.created"
	EventOIDCClientRevoked = "identity.oidc_client.revoked"
)

type (
	oidcClientCreated struct {
		ClientID     string   `json:"client_id"`
		AccountID    string   `json:"account_id"`
		Name         string   `json:"name"`
		Public       bool     `json:"public"`
		RedirectURIs []string `json:"redirect_uris"`
		GrantTypes   []string `json:"grant_types"`
		Scopes       []string `json:"scopes"`
		CreatedBy    string   `json:"created_by"`
	}
	oidcClientRevoked struct {
		ClientID  string `json:"client_id"`
		AccountID string `json:"account_id"`
		RevokedBy string `json:"revoked_by"`
	}
)

// NewSecret returns a random bearer secret (256 bits) and its stored
// digest.
func NewSecret() (secret, digest string) { return newToken() }

// DigestEqual compares two digests in constant time.
func DigestEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
