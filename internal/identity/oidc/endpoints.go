package oidc

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/platformco/platform/internal/identity"
)

// clientAuth is how an endpoint lets a client authenticate (RFC 6749
// §2.3.1). HTTP Basic always works.
type clientAuth struct {
	// post admits client_secret_post: the secret in the form.
	post bool
	// public admits a public client by its client_id alone.
	public bool
	// grants, when set, are the grant types the endpoint serves: the
	// token endpoint's.
	grants []oidc.GrantType
}

var (
	// tokenAuth is the token endpoint's: authorization codes and refresh
	// tokens, for confidential clients with either method and for public
	// ones (PKCE guards their codes).
	tokenAuth = clientAuth{post: true, public: true, grants: []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}}
	// revokeAuth is the revocation endpoint's (RFC 7009 §2.1 lets a
	// public client revoke its own tokens).
	revokeAuth = clientAuth{post: true, public: true}
	// introspectAuth is the introspection endpoint's (RFC 7662 §2.1): a
	// confidential client, with Basic, as op reads it.
	introspectAuth = clientAuth{}
)

// authMethods are the client authentication methods a discovery document
// lists for an endpoint authenticating as a does.
func (a clientAuth) authMethods() []oidc.AuthMethod {
	m := []oidc.AuthMethod{oidc.AuthMethodBasic}
	if a.post {
		m = append(m, oidc.AuthMethodPost)
	}
	if a.public {
		m = append(m, oidc.AuthMethodNone)
	}
	return m
}

// clientEndpoint authenticates the client before h reads anything else
// of the request: a token request that fails it never reaches the code
// or refresh token it carries, so whoever merely saw a code cannot spend
// it. A failure is RFC 6749 §5.2's 401 invalid_client in JSON, with a
// Basic challenge when the client tried Basic or sent no credentials;
// a deleted client fails it. The memo then holds the client, which op's
// own checks read again. For the token endpoint (a.grants), a grant type
// it does not serve is unsupported_grant_type, and a code the exchange
// read but refused (a wrong PKCE verifier or redirect URI) is burnt
// after it: a code gets one try from its own client.
func (s *storage) clientEndpoint(a clientAuth, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeOAuthError(w, http.StatusMethodNotAllowed, oidc.ErrInvalidRequest().WithDescription("use POST"))
			return
		}
		if err := r.ParseForm(); err != nil {
			writeOAuthError(w, http.StatusBadRequest, oidc.ErrInvalidRequest().WithDescription("the body is not a form (application/x-www-form-urlencoded)"))
			return
		}
		m := &clientMemo{}
		ctx := context.WithValue(r.Context(), clientMemoKey{}, m)
		c, basic, err := s.authenticate(ctx, r, a)
		if err != nil {
			var e *oidc.Error
			switch {
			case errors.As(err, &e) && e.ErrorType == oidc.InvalidClient:
				if basic {
					w.Header().Set("WWW-Authenticate", `Basic realm="`+s.issuer+`", charset="UTF-8"`)
				}
				writeOAuthError(w, http.StatusUnauthorized, e)
			case errors.As(err, &e):
				writeOAuthError(w, http.StatusBadRequest, e)
			default:
				s.log.ErrorContext(r.Context(), "oidc: authenticate a client", "err", err)
				writeOAuthError(w, http.StatusServiceUnavailable, oidc.ErrServerError().WithDescription("the provider cannot answer now; retry"))
			}
			return
		}
		if a.grants != nil {
			g := oidc.GrantType(r.PostForm.Get("grant_type"))
			if g == "" {
				writeOAuthError(w, http.StatusBadRequest, oidc.ErrInvalidRequest().WithDescription("grant_type missing"))
				return
			}
			supported := false
			for _, s := range a.grants {
				supported = supported || s == g
			}
			if !supported {
				writeOAuthError(w, http.StatusBadRequest, oidc.ErrUnsupportedGrantType().WithDescription("this provider issues tokens for authorization_code and refresh_token only"))
				return
			}
		}
		m.authenticated = c.ID
		h.ServeHTTP(w, r.WithContext(ctx))
		if m.codeRequest != "" && !m.redeemTried {
			if err := s.store.BurnOIDCCode(context.WithoutCancel(r.Context()), m.codeRequest); err != nil {
				s.log.ErrorContext(r.Context(), "oidc: burn a refused exchange's code", "err", err)
			}
		}
	})
}

// authenticate returns the client r authenticates as and whether the
// failure, if any, should carry a Basic challenge. Errors: *oidc.Error
// invalid_client or invalid_request, or the store's.
func (s *storage) authenticate(ctx context.Context, r *http.Request, a clientAuth) (identity.OIDCClient, bool, error) {
	var (
		id, secret     string
		basic, secrets bool
	)
	if r.PostForm.Has("client_assertion") || r.PostForm.Has("client_assertion_type") {
		return identity.OIDCClient{}, false, oidc.ErrInvalidClient().WithDescription("private_key_jwt is not supported: authenticate with client_secret_basic")
	}
	formID, formSecret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if user, pass, ok := r.BasicAuth(); ok {
		if r.PostForm.Has("client_secret") {
			return identity.OIDCClient{}, true, oidc.ErrInvalidRequest().WithDescription("use one client authentication method, not Basic and client_secret both")
		}
		// RFC 6749 §2.3.1: both are form-urlencoded before Basic.
		var err1, err2 error
		id, err1 = url.QueryUnescape(user)
		secret, err2 = url.QueryUnescape(pass)
		if err1 != nil || err2 != nil {
			return identity.OIDCClient{}, true, oidc.ErrInvalidClient().WithDescription("the Basic credentials are not form-urlencoded")
		}
		if formID != "" && formID != id {
			return identity.OIDCClient{}, true, oidc.ErrInvalidClient().WithDescription("client_id differs from the Basic credentials")
		}
		basic, secrets = true, true
	} else {
		id, secret, secrets = formID, formSecret, r.PostForm.Has("client_secret")
		if secrets && !a.post {
			return identity.OIDCClient{}, true, oidc.ErrInvalidClient().WithDescription("authenticate with HTTP Basic (client_secret_basic)")
		}
		if id == "" {
			return identity.OIDCClient{}, true, oidc.ErrInvalidClient().WithDescription("client authentication is required")
		}
	}
	c, digest, err := s.client(ctx, id)
	if errors.Is(err, identity.ErrOIDCClientNotFound) || (err == nil && c.RevokedAt != nil) {
		return c, basic || !secrets, oidc.ErrInvalidClient().WithDescription("unknown client or wrong credentials")
	}
	if err != nil {
		return c, false, err
	}
	switch {
	case c.Public && secret != "":
		return c, basic, oidc.ErrInvalidClient().WithDescription("a public client has no secret")
	case c.Public && !a.public:
		return c, basic, oidc.ErrInvalidClient().WithDescription("a public client cannot use this endpoint")
	case c.Public:
		return c, false, nil
	case !secrets:
		return c, true, oidc.ErrInvalidClient().WithDescription("client authentication is required")
	case !identity.DigestEqual(digest, identity.TokenDigest(secret)):
		return c, basic, oidc.ErrInvalidClient().WithDescription("unknown client or wrong credentials")
	}
	return c, false, nil
}

// writeOAuthError answers e as RFC 6749 §5.2 says: JSON, never cached.
func writeOAuthError(w http.ResponseWriter, status int, e *oidc.Error) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	httphelper.MarshalJSONWithStatus(w, e, status)
}

// userinfo serves the userinfo endpoint (OIDC Core §5.3) as RFC 6750 §3
// says: a request without a token is 401 with a bare Bearer challenge,
// one whose token is not live (unknown, expired, revoked, of a deleted
// client or a disabled user) is 401 with error="invalid_token".
func (s *storage) userinfo(crypto op.Crypto) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			writeOAuthError(w, http.StatusMethodNotAllowed, oidc.ErrInvalidRequest().WithDescription("use GET or POST"))
			return
		}
		token := bearer(r)
		if token == "" && r.Method == http.MethodPost {
			// RFC 6750 §2.2: the form-encoded body parameter.
			if err := r.ParseForm(); err == nil {
				token = r.PostForm.Get("access_token")
			}
		}
		challenge := `Bearer realm="` + s.issuer + `"`
		if token == "" {
			w.Header().Set("WWW-Authenticate", challenge)
			writeOAuthError(w, http.StatusUnauthorized, oidc.ErrInvalidRequest().WithDescription("an access token is required"))
			return
		}
		var info oidc.UserInfo
		err := errInactive
		if opened, derr := crypto.Decrypt(token); derr == nil {
			if tokenID, subject, ok := strings.Cut(opened, ":"); ok && !strings.Contains(subject, ":") {
				err = s.userinfoFromToken(r.Context(), &info, tokenID, subject)
			}
		}
		if errors.Is(err, errInactive) {
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="the access token is not active"`)
			writeOAuthError(w, http.StatusUnauthorized, &oidc.Error{ErrorType: "invalid_token", Description: "the access token is not active"})
			return
		}
		if err != nil {
			s.log.ErrorContext(r.Context(), "oidc: userinfo", "err", err)
			writeOAuthError(w, http.StatusServiceUnavailable, oidc.ErrServerError().WithDescription("the provider cannot answer now; retry"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		httphelper.MarshalJSON(w, &info)
	}
}

// errInactive: the access token is not live.
var errInactive = errors.New("the access token is not active")

// discovery serves the discovery document (OIDC Discovery §3), listing
// only what the provider does: the code flow (no implicit or hybrid
// response types), the two grants the token endpoint serves, each
// endpoint's client authentication methods, and no device authorization
// endpoint, check-session iframe or request objects.
func discovery(provider *op.Provider, st *storage, issuer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := op.CreateDiscoveryConfig(op.ContextWithIssuer(r.Context(), issuer), provider, st)
		c.DeviceAuthorizationEndpoint = ""
		c.CheckSessionIframe = ""
		c.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
		c.GrantTypesSupported = tokenAuth.grants
		c.TokenEndpointAuthMethodsSupported = tokenAuth.authMethods()
		c.TokenEndpointAuthSigningAlgValuesSupported = nil
		c.RevocationEndpointAuthMethodsSupported = revokeAuth.authMethods()
		c.RevocationEndpointAuthSigningAlgValuesSupported = nil
		c.IntrospectionEndpointAuthMethodsSupported = introspectAuth.authMethods()
		c.IntrospectionEndpointAuthSigningAlgValuesSupported = nil
		c.RequestObjectSigningAlgValuesSupported = nil
		c.RequestParameterSupported = false
		op.Discover(w, c)
	}
}
