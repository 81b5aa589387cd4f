package oidc

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/platformco/platform/internal/identity"
)

// Config is what the provider needs.
type Config struct {
	// Issuer is identity's issuer, the same as its session tokens'.
	Issuer string
	// PublicURL is the web app's origin (IDENTITY_PUBLIC_URL), which
	// serves the sign-in and consent pages; empty means the issuer.
	PublicURL string
	Service   *identity.Service
	Store     identity.OIDCStore
	// MasterKey (IDENTITY_MASTER_KEY) derives the key sealing access
	// tokens (op's opaque "id:subject" tokens).
	MasterKey []byte
	Now       func() time.Time
	// Logger receives the library's request errors; nil discards them.
	Logger *slog.Logger
}

// New returns the provider's handler for /.well-known/openid-configuration
// and /oauth2/….
func New(cfg Config) (http.Handler, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	issuer := strings.TrimRight(cfg.Issuer, "/")
	publicURL := strings.TrimRight(cfg.PublicURL, "/")
	if publicURL == "" {
		publicURL = issuer
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	st := &storage{store: cfg.Store, keys: cfg.Service.Keys(), issuer: issuer, signIn: publicURL + SignInPath, now: cfg.Now, log: cfg.Logger,
		codes: expirable.NewLRU[string, issuedCode](issuedCodes, nil, identity.OIDCAuthRequestTTL)}
	sealKey := [32]byte(derive("identity oidc access tokens", cfg.MasterKey))
	conf := &op.Config{
		CryptoKey:      sealKey,
		CodeMethodS256: true,
		// The end-session endpoint ends the client's tokens and sends
		// the browser to the web app's signed-out page (no client has
		// post-logout redirect URIs).
		DefaultLogoutRedirectURI: publicURL + SignedOutPath,
		AuthMethodPost:           true,
		GrantTypeRefreshToken:    true,
		SupportedScopes:          identity.OIDCScopes,
		SupportedClaims:          []string{"sub", "aud", "exp", "iat", "iss", "auth_time", "nonce", "email", "email_verified", "name", "updated_at", "accounts"},
	}
	opts := []op.Option{
		op.WithLogger(cfg.Logger),
		op.WithCrypto(newOpenedTokens(sealKey)),
		op.WithCustomAuthEndpoint(op.NewEndpoint("oauth2/authorize")),
		op.WithCustomTokenEndpoint(op.NewEndpoint("oauth2/token")),
		op.WithCustomUserinfoEndpoint(op.NewEndpoint("oauth2/userinfo")),
		op.WithCustomRevocationEndpoint(op.NewEndpoint("oauth2/revoke")),
		op.WithCustomIntrospectionEndpoint(op.NewEndpoint("oauth2/introspect")),
		op.WithCustomEndSessionEndpoint(op.NewEndpoint("oauth2/end_session")),
		op.WithCustomKeysEndpoint(op.NewEndpoint("oauth2/keys")),
	}
	if strings.HasPrefix(issuer, "http://") {
		// Development issuers (http://localhost:PORT) are plain HTTP.
		opts = append(opts, op.WithAllowInsecure())
	}
	provider, err := op.NewProvider(conf, st, op.StaticIssuer(issuer), opts...)
	if err != nil {
		return nil, err
	}
	q := &requests{
		svc: cfg.Service, store: cfg.Store, issuer: issuer, publicURL: publicURL, provider: provider, log: cfg.Logger, now: cfg.Now,
		key: derive("identity oidc callback", cfg.MasterKey),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2/requests/{id}", q.show)
	mux.HandleFunc("POST /oauth2/requests/{id}/allow", q.answer(allow))
	mux.HandleFunc("POST /oauth2/requests/{id}/deny", q.answer(deny))
	mux.HandleFunc("POST /oauth2/requests/{id}/resume", q.answer(resume))
	mux.HandleFunc(CallbackPath, q.callback)
	mux.Handle("/.well-known/openid-configuration", discovery(provider, st, issuer))
	mux.Handle("/oauth2/token", st.clientEndpoint(tokenAuth, provider))
	mux.Handle("/oauth2/revoke", st.clientEndpoint(revokeAuth, provider))
	mux.Handle("/oauth2/introspect", st.clientEndpoint(introspectAuth, provider))
	mux.Handle("/oauth2/userinfo", st.userinfo(provider.Crypto()))
	mux.Handle("/", provider)
	return mux, nil
}

// derive is a key of its own for purpose from the master key.
func derive(purpose string, master []byte) []byte {
	k := sha256.Sum256(append([]byte(purpose+"\x00"), master...))
	return k[:]
}

// openedTokens is op's crypto for identity's opaque access tokens (an
// "id:subject" sealed with AES-256-GCM, AES-CFB still opened), with a
// memory of what it opened. Opening is a pure function of the key and
// the token, so a remembered answer is the answer; it spares userinfo
// and introspection the JWE parsing and decryption on every call by a
// client presenting the same token, as the verified-token cache spares
// identity's own reads a signature check (tokencache). What the token
// names is still looked up, live, on every call.
type openedTokens struct {
	op.Crypto
	opened *expirable.LRU[[32]byte, string]
}

// openedTokensMax bounds the memory; entries also go once an access
// token could no longer be live.
const openedTokensMax = 16384

func newOpenedTokens(key [32]byte) openedTokens {
	aead := op.NewAES256GCMCrypto(key, "")
	return openedTokens{
		Crypto: op.NewCompositeCrypto(aead, []op.Decrypter{aead, op.NewAESDecrypter(key)}),
		opened: expirable.NewLRU[[32]byte, string](openedTokensMax, nil, identity.OIDCAccessTokenTTL),
	}
}

func (o openedTokens) Decrypt(token string) (string, error) {
	k := sha256.Sum256([]byte(token))
	if v, ok := o.opened.Get(k); ok {
		return v, nil
	}
	v, err := o.Crypto.Decrypt(token)
	if err == nil {
		o.opened.Add(k, v)
	}
	return v, err
}
