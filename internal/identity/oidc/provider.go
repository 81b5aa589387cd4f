package oidc

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/platformco/platform/internal/identity"
)

// The provider's paths under identity's origin (operations.md §7: the
// gateway sends /.well-known/openid-configuration and /oauth2/… here).
const (
	LoginPath   = "/oauth2/login"
	ConsentPath = "/oauth2/consent"
	// callbackPath is op's: the authorization endpoint plus /callback.
	callbackPath = "/oauth2/authorize/callback"
)

// Config is what the provider needs.
type Config struct {
	// Issuer is identity's issuer, the same as its session tokens'.
	Issuer  string
	Service *identity.Service
	Store   identity.OIDCStore
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
	st := &storage{store: cfg.Store, keys: cfg.Service.Keys(), issuer: issuer, now: cfg.Now}
	conf := &op.Config{
		CryptoKey:             sha256.Sum256(append([]byte("identity oidc access tokens\x00"), cfg.MasterKey...)),
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       identity.OIDCScopes,
		SupportedClaims:       []string{"sub", "aud", "exp", "iat", "iss", "auth_time", "nonce", "email", "name", "updated_at", "accounts"},
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opts := []op.Option{
		op.WithLogger(cfg.Logger),
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
	p := &pages{svc: cfg.Service, store: cfg.Store, issuer: issuer, secureCookie: strings.HasPrefix(issuer, "https://"), log: cfg.Logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LoginPath, p.login)
	mux.HandleFunc("POST "+LoginPath, p.signIn)
	mux.HandleFunc("GET "+ConsentPath, p.consent)
	mux.HandleFunc("POST "+ConsentPath, p.decide)
	mux.Handle("/", provider)
	return mux, nil
}
