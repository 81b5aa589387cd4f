// Package oidc is identity's OpenID Provider: zitadel/oidc's op package
// over identity's own storage (identity.OIDCStore) and key set
// (identity.KeyRing). The authorization endpoint's sign-in and consent
// pages are the web app's (parlor); requests.go is their side here.
package oidc

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/ids"
)

// storage implements op.Storage.
type storage struct {
	store  identity.OIDCStore
	keys   *identity.KeyRing
	issuer string
	// signIn is the web app's sign-in page of a request.
	signIn string
	now    func() time.Time
	log    *slog.Logger
	// codes holds, by code digest, the request and client of each code
	// this process issued and nobody has presented yet (see issuedCode).
	codes *expirable.LRU[string, issuedCode]
}

// issuedCode is what the callback knew when it issued a code: the
// request (done, bound to its user, its code saved) and its client with
// the secret digest. The code's exchange takes it instead of reading
// both back; the statement that redeems the code still checks, in the
// database, that it is unused and unexpired, its client honoured and
// its user enabled. An entry is taken once: a second presentation of
// the code reads the database, which recognises the reuse.
type issuedCode struct {
	r      identity.OIDCAuthRequest
	c      identity.OIDCClient
	digest string
}

// issuedCodes bounds the memory of issued codes: past it (or after a
// request's lifetime) an exchange reads its code from the database.
const issuedCodes = 8192

var (
	_ op.Storage                   = (*storage)(nil)
	_ op.CanSetUserinfoFromRequest = (*storage)(nil)
)

// client adapts identity.OIDCClient to op.Client.
type client struct {
	c        identity.OIDCClient
	loginURL string
}

func (c client) GetID() string                       { return c.c.ID }
func (c client) RedirectURIs() []string              { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string    { return nil }
func (c client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c client) AuthMethod() oidc.AuthMethod {
	if c.c.Public {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c client) GrantTypes() []oidc.GrantType {
	out := make([]oidc.GrantType, 0, len(c.c.GrantTypes))
	for _, g := range c.c.GrantTypes {
		out = append(out, oidc.GrantType(g))
	}
	return out
}
func (c client) LoginURL(id string) string {
	return c.loginURL + "?authRequestID=" + url.QueryEscape(id)
}
func (c client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c client) IDTokenLifetime() time.Duration      { return time.Hour }

// DevMode only relaxes the scheme of an exactly matched redirect URI;
// registration admits http only on loopback hosts.
func (c client) DevMode() bool                                                { return true }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string     { return keep }
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string { return keep }
func (c client) IsScopeAllowed(scope string) bool                             { return slices.Contains(c.c.Scopes, scope) }
func (c client) IDTokenUserinfoClaimsAssertion() bool                         { return false }
func (c client) ClockSkew() time.Duration                                     { return 0 }

func keep(s []string) []string { return s }

// authRequest adapts identity.OIDCAuthRequest to op.AuthRequest.
type authRequest struct{ r identity.OIDCAuthRequest }

func (a authRequest) GetID() string                      { return a.r.ID }
func (a authRequest) GetACR() string                     { return "" }
func (a authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a authRequest) GetAudience() []string              { return []string{a.r.ClientID} }
func (a authRequest) GetAuthTime() time.Time             { return a.r.AuthTime }
func (a authRequest) GetClientID() string                { return a.r.ClientID }
func (a authRequest) GetNonce() string                   { return a.r.Nonce }
func (a authRequest) GetRedirectURI() string             { return a.r.RedirectURI }
func (a authRequest) GetScopes() []string                { return a.r.Scopes }
func (a authRequest) GetState() string                   { return a.r.State }
func (a authRequest) GetSubject() string                 { return a.r.UserID }
func (a authRequest) Done() bool                         { return a.r.Done }
func (a authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseType(a.r.ResponseType) }
func (a authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseMode(a.r.ResponseMode) }
func (a authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.r.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.r.CodeChallenge, Method: oidc.CodeChallengeMethodS256}
}

// refreshRequest adapts a stored refresh token to op.RefreshTokenRequest.
type refreshRequest struct {
	t identity.OIDCToken
}

func (r *refreshRequest) GetAMR() []string            { return []string{"pwd"} }
func (r *refreshRequest) GetAudience() []string       { return []string{r.t.ClientID} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.t.AuthTime }
func (r *refreshRequest) GetClientID() string         { return r.t.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.t.Scopes }
func (r *refreshRequest) GetSubject() string          { return r.t.UserID }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.t.Scopes = s }

// clientMemoKey carries one token-family request's memo: of the client
// it authenticated (clientEndpoint), which op looks up again, and of the
// code it read.
type clientMemoKey struct{}

type clientMemo struct {
	c      identity.OIDCClient
	digest string
	ok     bool
	// authenticated is the id of the client the request authenticated as.
	authenticated string
	// codeRequest is the request whose code AuthRequestByCode read for
	// the authenticated client; redeemTried is set once the exchange got
	// as far as redeeming it.
	codeRequest string
	redeemTried bool
	// answered is the request the callback read (requests.callback),
	// which op then asks for by id.
	answered *identity.OIDCAuthRequest
}

// client reads a client once per request.
func (s *storage) client(ctx context.Context, clientID string) (identity.OIDCClient, string, error) {
	m, _ := ctx.Value(clientMemoKey{}).(*clientMemo)
	if m != nil && m.ok && m.c.ID == clientID {
		return m.c, m.digest, nil
	}
	c, digest, err := s.store.OIDCClient(ctx, clientID)
	if m != nil && err == nil {
		m.c, m.digest, m.ok = c, digest, true
	}
	return c, digest, err
}

func (s *storage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	c, _, err := s.client(ctx, clientID)
	if errors.Is(err, identity.ErrOIDCClientNotFound) || (err == nil && c.RevokedAt != nil) {
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client")
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return client{c: c, loginURL: s.signIn}, nil
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, clientID, secret string) error {
	c, digest, err := s.client(ctx, clientID)
	if errors.Is(err, identity.ErrOIDCClientNotFound) {
		return errors.New("unknown client")
	}
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	if c.RevokedAt != nil || c.Public || !identity.DigestEqual(digest, identity.TokenDigest(secret)) {
		return errors.New("wrong client credentials")
	}
	return nil
}

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.ResponseType != oidc.ResponseTypeCode {
		return nil, oidc.ErrInvalidRequest().WithDescription("only the authorization code flow is supported")
	}
	if req.CodeChallenge != "" && req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	}
	c, _, err := s.store.OIDCClient(ctx, req.ClientID)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithParent(err)
	}
	if c.Public && req.CodeChallenge == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE (S256) is required for a public client")
	}
	// A client gets at most the scopes it registered (RFC 6749 §3.3 lets
	// the server grant fewer than asked).
	scopes := make([]string, 0, len(req.Scopes))
	for _, sc := range req.Scopes {
		if slices.Contains(c.Scopes, sc) && !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	r := identity.OIDCAuthRequest{
		ID: uuid.NewString(), ClientID: req.ClientID, RedirectURI: req.RedirectURI, Scopes: scopes,
		State: req.State, Nonce: req.Nonce, ResponseType: string(req.ResponseType), ResponseMode: string(req.ResponseMode),
		CodeChallenge: req.CodeChallenge, Prompt: strings.Join(req.Prompt, " "), MaxAge: req.MaxAge,
	}
	if err := s.store.CreateOIDCAuthRequest(ctx, r); err != nil {
		return nil, err
	}
	return authRequest{r}, nil
}

func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	if m, _ := ctx.Value(clientMemoKey{}).(*clientMemo); m != nil && m.answered != nil && m.answered.ID == id {
		return authRequest{*m.answered}, nil
	}
	r, err := s.store.OIDCAuthRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	return authRequest{r}, nil
}

// AuthRequestByCode only reads: the code is redeemed by the statement
// that stores the tokens (CreateAccessToken, CreateAccessAndRefreshTokens),
// so an exchange is one write. A code this process issued is not even
// read: the callback left its request and client (issuedCode). A code
// the exchange then refuses is burnt after it (withClientMemo).
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	codeDigest := identity.TokenDigest(code)
	var (
		r      identity.OIDCAuthRequest
		c      identity.OIDCClient
		digest string
		err    error
	)
	// Remove answers true to one caller only: of concurrent exchanges of
	// a code, the others read the database and meet the reuse there.
	if e, ok := s.codes.Peek(codeDigest); ok && s.codes.Remove(codeDigest) && e.r.ExpiresAt.After(s.now()) {
		r, c, digest = e.r, e.c, e.digest
	} else {
		r, c, digest, err = s.store.OIDCAuthRequestByCode(ctx, codeDigest)
		if err != nil {
			return nil, err
		}
	}
	if m, _ := ctx.Value(clientMemoKey{}).(*clientMemo); m != nil && m.authenticated == r.ClientID {
		// The code is the authenticated client's: a refusal from here
		// on spends it. Another client's code is refused (invalid_grant)
		// and left alone: presenting it must not block its login.
		m.codeRequest = r.ID
		m.c, m.digest, m.ok = c, digest, true
	}
	return authRequest{r}, nil
}

// redeem stores the tokens of a code exchange, redeeming its code in the
// same statement.
func (s *storage) redeem(ctx context.Context, r authRequest, access identity.OIDCToken, refresh *identity.OIDCToken, refreshDigest string) error {
	if m, _ := ctx.Value(clientMemoKey{}).(*clientMemo); m != nil && m.codeRequest == r.r.ID {
		m.redeemTried = true
	}
	err := s.store.RedeemOIDCCode(ctx, r.r.ID, access, refresh, refreshDigest)
	if errors.Is(err, identity.ErrOIDCGrantReused) || errors.Is(err, identity.ErrOIDCGrantUnknown) {
		return oidc.ErrInvalidGrant().WithDescription("invalid code").WithParent(err)
	}
	return err
}

func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	codeDigest := identity.TokenDigest(code)
	if err := s.store.SaveOIDCCode(ctx, id, codeDigest); err != nil {
		return err
	}
	if m, _ := ctx.Value(clientMemoKey{}).(*clientMemo); m != nil && m.answered != nil && m.answered.ID == id && m.ok && m.c.ID == m.answered.ClientID {
		s.codes.Add(codeDigest, issuedCode{r: *m.answered, c: m.c, digest: m.digest})
	}
	return nil
}

// DeleteAuthRequest keeps the row: a redeemed code must stay recognisable
// so that its second use revokes what the first issued. It expires.
func (s *storage) DeleteAuthRequest(context.Context, string) error { return nil }

func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	access, err := s.newAccess(req)
	if err != nil {
		return "", time.Time{}, err
	}
	r, ok := req.(authRequest)
	if !ok {
		// op asks for an access token alone only for a code (a refresh
		// grant always rotates its refresh token).
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	if err := s.redeem(ctx, r, access, nil, ""); err != nil {
		return "", time.Time{}, err
	}
	return access.ID, access.ExpiresAt, nil
}

func (s *storage) newAccess(req op.TokenRequest) (identity.OIDCToken, error) {
	now := s.now()
	t := identity.OIDCToken{ID: ids.New(), Kind: "access", UserID: req.GetSubject(), Scopes: req.GetScopes(), ExpiresAt: now.Add(identity.OIDCAccessTokenTTL), FamilyID: ids.New()}
	switch r := req.(type) {
	case authRequest:
		t.ClientID, t.AuthRequestID, t.AuthTime = r.r.ClientID, r.r.ID, r.r.AuthTime
	case *refreshRequest:
		t.ClientID, t.AuthRequestID, t.AuthTime, t.FamilyID = r.t.ClientID, r.t.AuthRequestID, r.t.AuthTime, r.t.FamilyID
	default:
		return t, oidc.ErrUnsupportedGrantType()
	}
	return t, nil
}

func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	access, err := s.newAccess(req)
	if err != nil {
		return "", "", time.Time{}, err
	}
	refresh := access
	refresh.ID, refresh.Kind, refresh.ExpiresAt = ids.New(), "refresh", s.now().Add(identity.OIDCRefreshTTL)
	token, digest := identity.NewSecret()
	if r, ok := req.(authRequest); ok {
		if err := s.redeem(ctx, r, access, &refresh, digest); err != nil {
			return "", "", time.Time{}, err
		}
		return access.ID, token, access.ExpiresAt, nil
	}
	if current == "" {
		return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token missing")
	}
	if err := s.store.RotateOIDCTokens(ctx, access, refresh, digest, identity.TokenDigest(current)); err != nil {
		if errors.Is(err, identity.ErrOIDCGrantReused) || errors.Is(err, identity.ErrOIDCGrantUnknown) {
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithParent(err)
		}
		return "", "", time.Time{}, err
	}
	return access.ID, token, access.ExpiresAt, nil
}

func (s *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	t, err := s.store.OIDCRefreshToken(ctx, identity.TokenDigest(token))
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithParent(err)
	}
	return &refreshRequest{t: t}, nil
}

func (s *storage) TerminateSession(ctx context.Context, userID, clientID string) error {
	return s.store.RevokeOIDCUserClient(ctx, userID, clientID)
}

// RevokeToken revokes an access token by id, or a refresh token's family
// (GetRefreshTokenInfo gave its id), of the revoking client only.
func (s *storage) RevokeToken(ctx context.Context, tokenOrID, _ string, clientID string) *oidc.Error {
	if err := s.store.RevokeOIDCToken(ctx, tokenOrID, clientID); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	t, err := s.store.OIDCRefreshToken(ctx, identity.TokenDigest(token))
	if err != nil || t.ClientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return t.UserID, t.ID, nil
}

// signingKey is identity's current Ed25519 signer.
type signingKey struct {
	kid string
	key ed25519.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.EdDSA }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.kid }

// publicKey is one published key of identity's key set.
type publicKey struct {
	kid string
	key ed25519.PublicKey
}

func (k publicKey) ID() string                         { return k.kid }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.EdDSA }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.key }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	kid, key := s.keys.Signer()
	if key == nil {
		return nil, errors.New("no signing key loaded")
	}
	return signingKey{kid, key}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.EdDSA}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	order, keys := s.keys.PublicKeys()
	out := make([]op.Key, 0, len(order))
	for _, kid := range order {
		out = append(out, publicKey{kid, keys[kid]})
	}
	return out, nil
}

// SetUserinfoFromScopes leaves the ID token's claims to
// SetUserinfoFromRequest, which op calls right after it.
func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, userID, _ string, _ []string) error {
	info.Subject = userID
	return nil
}

// SetUserinfoFromRequest fills the ID token's claims beyond the standard
// ones: only the accounts claim reaches it (the userinfo scopes are
// served by the userinfo endpoint). A code exchange without it reads
// nothing: the statement that stored its tokens found the user enabled.
// A refresh reads the user, so a disabled one gets no ID token.
func (s *storage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if _, ok := req.(authRequest); ok && !slices.Contains(scopes, ScopeAccounts) {
		info.Subject = req.GetSubject()
		return nil
	}
	return s.fillUser(ctx, info, req.GetSubject(), scopes)
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	return s.userinfoFromToken(ctx, info, tokenID, subject)
}

// userinfoFromToken fills info for the live access token tokenID of
// subject. Errors: errInactive, or the store's.
func (s *storage) userinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject string) error {
	t, u, err := s.store.OIDCAccessToken(ctx, tokenID)
	if errors.Is(err, identity.ErrOIDCGrantUnknown) || (err == nil && t.UserID != subject) {
		return errInactive
	}
	if err != nil {
		return err
	}
	err = s.fill(ctx, info, u, t.Scopes)
	if errors.Is(err, identity.ErrUserNotFound) {
		return errInactive
	}
	return err
}

// SetIntrospectionFromToken answers only the client the token was issued
// to; for anyone else the token is inactive.
func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	t, u, err := s.store.OIDCAccessToken(ctx, tokenID)
	if err != nil || t.UserID != subject || t.ClientID != clientID {
		return errors.New("the access token is not active")
	}
	var info oidc.UserInfo
	if err := s.fill(ctx, &info, u, t.Scopes); err != nil {
		return err
	}
	resp.SetUserInfo(&info)
	resp.Active = true
	resp.Scope = oidc.SpaceDelimitedArray(t.Scopes)
	resp.ClientID = t.ClientID
	resp.TokenType = oidc.BearerToken
	resp.Expiration = oidc.FromTime(t.ExpiresAt)
	resp.IssuedAt = oidc.FromTime(t.CreatedAt)
	resp.Audience = oidc.Audience{t.ClientID}
	resp.Issuer = s.issuer
	return nil
}

// fillUser loads the user (with their accounts only when a scope asks
// for them) and fills the claims. Errors: the user is gone or disabled.
func (s *storage) fillUser(ctx context.Context, info *oidc.UserInfo, userID string, scopes []string) error {
	u, err := s.store.OIDCUser(ctx, userID, slices.Contains(scopes, ScopeAccounts))
	if err != nil {
		return err
	}
	info.Subject = u.User.ID
	s.claims(info, u, scopes)
	return nil
}

// fill sets the claims scopes grant for user u, reading their accounts
// only when a scope asks for them.
func (s *storage) fill(ctx context.Context, info *oidc.UserInfo, u identity.User, scopes []string) error {
	if slices.Contains(scopes, ScopeAccounts) {
		return s.fillUser(ctx, info, u.ID, scopes)
	}
	info.Subject = u.ID
	s.claims(info, identity.OIDCUser{User: u}, scopes)
	return nil
}

func (s *storage) claims(info *oidc.UserInfo, u identity.OIDCUser, scopes []string) {
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeEmail:
			// email_verified goes with email (OIDC Core §5.4), false
			// too: op's field drops a false, the claim keeps it.
			verified := u.User.EmailVerifiedAt != nil
			info.Email, info.EmailVerified = u.User.Email, oidc.Bool(verified)
			info.AppendClaims("email_verified", verified)
		case oidc.ScopeProfile:
			info.Name = u.User.DisplayName
			info.UpdatedAt = oidc.FromTime(u.User.CreatedAt)
		case ScopeAccounts:
			accounts := make([]map[string]string, 0, len(u.Accounts))
			for _, a := range u.Accounts {
				accounts = append(accounts, map[string]string{"id": a.ID, "role": string(a.Role)})
			}
			info.AppendClaims("accounts", accounts)
		}
	}
}

// ScopeAccounts asks for the accounts claim: the user's account ids and
// roles.
const ScopeAccounts = "accounts"

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetKeyByIDAndClientID serves the JWT profile grant, which identity's
// clients are not registered for.
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("the JWT profile grant is not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not supported")
}

// Health serves op's own probes, which identity does not mount (its
// /readyz covers the database); the provider itself holds no state.
func (s *storage) Health(context.Context) error { return nil }
