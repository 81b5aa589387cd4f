package oidc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/identity/oidc"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// answer is an endpoint's response, its JSON body decoded.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// post sends form to path as a client would, after set (which adds the
// client's credentials) has seen the request.
func (w *world) post(t testing.TB, path string, form url.Values, set func(*http.Request)) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, identitytest.Issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if set != nil {
		set(req)
	}
	return w.do(t, req)
}

func (w *world) do(t testing.TB, req *http.Request) answer {
	t.Helper()
	resp, err := w.rp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func basic(id, secret string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret)) }
}

// wantInvalidClient checks RFC 6749 §5.2's answer to a failed client
// authentication: 401, JSON error invalid_client, and a Basic challenge
// when challenge says so.
func wantInvalidClient(t testing.TB, a answer, challenge bool) {
	t.Helper()
	if a.status != http.StatusUnauthorized || a.body["error"] != "invalid_client" {
		t.Errorf("got %d %q, want 401 with JSON error invalid_client", a.status, a.raw)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	if got := a.header.Get("WWW-Authenticate"); challenge != strings.HasPrefix(got, "Basic ") {
		t.Errorf("WWW-Authenticate: got %q, want a Basic challenge: %v", got, challenge)
	}
}

// TestClientAuthenticatedBeforeTheCode: a token request that fails
// client authentication is 401 invalid_client and leaves the code alone,
// so the client's own exchange afterwards succeeds; another client
// presenting the code is refused without spending it either.
func TestClientAuthenticatedBeforeTheCode(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		other, otherSecret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		tests := []struct {
			name      string
			form      url.Values
			set       func(*http.Request)
			status    int
			challenge bool
		}{
			{"WrongSecretBasic", nil, basic(c.ID, secret+"x"), http.StatusUnauthorized, true},
			{"WrongSecretPost", url.Values{"client_id": {c.ID}, "client_secret": {"nope"}}, nil, http.StatusUnauthorized, false},
			{"MissingSecret", url.Values{"client_id": {c.ID}}, nil, http.StatusUnauthorized, true},
			{"NoCredentials", nil, nil, http.StatusUnauthorized, true},
			{"UnknownClient", nil, basic("9d7c1b55-7b4e-4a43-9d69-1f1e1f6c4a10", secret), http.StatusUnauthorized, true},
			{"BasicNotFormEncoded", nil, func(r *http.Request) { r.SetBasicAuth(c.ID, "%zz") }, http.StatusUnauthorized, true},
			{"AnotherClientsCode", nil, basic(other.ID, otherSecret), http.StatusBadRequest, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				v := oauth2.GenerateVerifier()
				code := w.code(t, conf, oauth2.S256ChallengeOption(v))
				form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {v}}
				for k, vs := range tt.form {
					form[k] = vs
				}
				a := w.post(t, "/oauth2/token", form, tt.set)
				if tt.status == http.StatusUnauthorized {
					wantInvalidClient(t, a, tt.challenge)
				} else if a.status != tt.status || a.body["error"] != "invalid_grant" {
					t.Errorf("got %d %q, want %d invalid_grant", a.status, a.raw, tt.status)
				}
				tok, err := conf.Exchange(w.ctx, code, oauth2.VerifierOption(v))
				if err != nil || tok.AccessToken == "" {
					t.Errorf("the client's own exchange afterwards: %v, want tokens (the code unspent)", err)
				}
			})
		}

		t.Run("DeletedClient", func(t *testing.T) {
			v := oauth2.GenerateVerifier()
			code := w.code(t, conf, oauth2.S256ChallengeOption(v))
			tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if err := identity.RevokeOIDCClient(context.Background(), w.env.Store, w.admin, c.ID); err != nil {
				t.Fatalf("delete client: %v", err)
			}
			wantInvalidClient(t, w.post(t, "/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {redirectURI}, "code_verifier": {v}}, basic(c.ID, secret)), true)
			wantInvalidClient(t, w.post(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}},
				basic(c.ID, secret)), true)
			wantInvalidClient(t, w.post(t, "/oauth2/introspect", url.Values{"token": {tok.AccessToken}}, basic(c.ID, secret)), true)
		})
	})
}

// TestTokenEndpointServesOnlyItsGrants: the grants discovery does not
// list are unsupported_grant_type, after the client authenticated.
func TestTokenEndpointServesOnlyItsGrants(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		for _, g := range []string{"urn:ietf:params:oauth:grant-type:jwt-bearer", "implicit", "client_credentials", "password",
			"urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:token-exchange"} {
			t.Run(g, func(t *testing.T) {
				a := w.post(t, "/oauth2/token", url.Values{"grant_type": {g}, "assertion": {"x.y.z"}}, basic(c.ID, secret))
				if a.status != http.StatusBadRequest || a.body["error"] != "unsupported_grant_type" {
					t.Errorf("got %d %q, want 400 unsupported_grant_type", a.status, a.raw)
				}
			})
		}
	})
}

// TestIntrospectionAndRevocationRefuseClientsInJSON: RFC 7662 §2.3 and
// RFC 7009 §2.2.1 answer a failed client authentication as RFC 6749
// §5.2 does.
func TestIntrospectionAndRevocationRefuseClientsInJSON(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		pub, _ := w.client(t, true)
		tests := []struct {
			name      string
			path      string
			form      url.Values
			set       func(*http.Request)
			challenge bool
		}{
			{"IntrospectWrongSecret", "/oauth2/introspect", nil, basic(c.ID, "nope"), true},
			{"IntrospectNoCredentials", "/oauth2/introspect", nil, nil, true},
			{"IntrospectSecretInForm", "/oauth2/introspect", url.Values{"client_id": {c.ID}, "client_secret": {secret}}, nil, true},
			{"IntrospectPublicClient", "/oauth2/introspect", url.Values{"client_id": {pub.ID}}, nil, false},
			{"IntrospectJWTAssertion", "/oauth2/introspect", url.Values{"client_assertion": {"x.y.z"},
				"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}}, nil, false},
			{"RevokeWrongSecret", "/oauth2/revoke", nil, basic(c.ID, "nope"), true},
			{"RevokeWrongSecretPost", "/oauth2/revoke", url.Values{"client_id": {c.ID}, "client_secret": {"nope"}}, nil, false},
			{"RevokeNoCredentials", "/oauth2/revoke", nil, nil, true},
			{"RevokeUnknownClient", "/oauth2/revoke", url.Values{"client_id": {"not-a-client"}}, nil, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				form := url.Values{"token": {"whatever"}}
				for k, vs := range tt.form {
					form[k] = vs
				}
				wantInvalidClient(t, w.post(t, tt.path, form, tt.set), tt.challenge)
			})
		}
	})
}

// TestUserinfoBearerErrors: RFC 6750 §3: no token is 401 with a Bearer
// challenge; a token that is not live is 401 invalid_token.
func TestUserinfoBearerErrors(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		v := oauth2.GenerateVerifier()
		tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if status, out := w.tokenCall(t, "/oauth2/revoke", url.Values{"token": {tok.AccessToken}}, c.ID, secret); status != http.StatusOK {
			t.Fatalf("revoke: got %d %v", status, out)
		}
		tests := []struct {
			name, token string
			invalid     bool
		}{
			{"NoToken", "", false},
			{"Garbage", "not-a-token", true},
			{"Revoked", tok.AccessToken, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, identitytest.Issuer+"/oauth2/userinfo", nil)
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				a := w.do(t, req)
				challenge := a.header.Get("WWW-Authenticate")
				if a.status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") {
					t.Fatalf("got %d with WWW-Authenticate %q, want 401 with a Bearer challenge", a.status, challenge)
				}
				if got := strings.Contains(challenge, `error="invalid_token"`); got != tt.invalid {
					t.Errorf("challenge %q: error=\"invalid_token\" %v, want %v", challenge, got, tt.invalid)
				}
			})
		}
	})
}

// TestDiscoveryListsOnlyWhatWorks: the discovery document promises the
// code flow and its two grants, no device authorization, implicit,
// hybrid or JWT bearer; each endpoint it lists answers; the end-session
// endpoint without parameters ends at the web app's signed-out page.
func TestDiscoveryListsOnlyWhatWorks(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		var doc map[string]any
		if err := json.Unmarshal([]byte(get(t, w.rp, identitytest.Issuer+"/.well-known/openid-configuration", http.StatusOK)), &doc); err != nil {
			t.Fatal(err)
		}
		strs := func(key string) []string {
			var out []string
			for _, v := range asSlice(doc[key]) {
				out = append(out, v.(string))
			}
			return out
		}
		for key, want := range map[string][]string{
			"grant_types_supported":    {"authorization_code", "refresh_token"},
			"response_types_supported": {"code"},
		} {
			if got := strs(key); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", key, got, want)
			}
		}
		for _, key := range []string{"device_authorization_endpoint", "check_session_iframe", "request_object_signing_alg_values_supported"} {
			if v, ok := doc[key]; ok {
				t.Errorf("%s: got %v, want absent", key, v)
			}
		}
		if got := strs("introspection_endpoint_auth_methods_supported"); !slices.Equal(got, []string{"client_secret_basic"}) {
			t.Errorf("introspection auth methods: got %v, want client_secret_basic", got)
		}
		if got := strs("claims_supported"); !slices.Contains(got, "email_verified") {
			t.Errorf("claims_supported: got %v, want email_verified among them", got)
		}
		for _, key := range []string{"authorization_endpoint", "token_endpoint", "userinfo_endpoint", "revocation_endpoint",
			"introspection_endpoint", "end_session_endpoint", "jwks_uri"} {
			u, _ := doc[key].(string)
			if !strings.HasPrefix(u, identitytest.Issuer+"/") {
				t.Errorf("%s: got %q, want an endpoint of the issuer", key, u)
				continue
			}
			resp, err := w.browser(t).Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				t.Errorf("%s %s: got 404", key, u)
			}
		}

		resp, err := w.browser(t).Get(doc["end_session_endpoint"].(string))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != webApp+oidc.SignedOutPath {
			t.Errorf("end session without parameters: got %d to %q, want 302 to %s", resp.StatusCode, loc, webApp+oidc.SignedOutPath)
		}
	})
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// TestEmailVerifiedGoesWithEmail: the email scope gives email_verified,
// true for a verified address and false (present) for one not verified,
// wherever email goes: userinfo and introspection.
func TestEmailVerifiedGoesWithEmail(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		w.env.Register(t, "bob@example.com")
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		for _, tt := range []struct {
			email    string
			verified bool
		}{{"alice@example.com", true}, {"bob@example.com", false}} {
			t.Run(tt.email, func(t *testing.T) {
				w.email = tt.email
				v := oauth2.GenerateVerifier()
				tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				req, _ := http.NewRequest(http.MethodGet, identitytest.Issuer+"/oauth2/userinfo", nil)
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				if a := w.do(t, req); a.status != http.StatusOK || a.body["email"] != tt.email || a.body["email_verified"] != tt.verified {
					t.Errorf("userinfo: got %d %s, want email %s and email_verified %v", a.status, a.raw, tt.email, tt.verified)
				}
				if _, out := w.tokenCall(t, "/oauth2/introspect", url.Values{"token": {tok.AccessToken}}, c.ID, secret); out["email_verified"] != tt.verified {
					t.Errorf("introspection: got %v, want email_verified %v", out, tt.verified)
				}
			})
		}
	})
}

// TestDatabaseDownFailsClosed: with identity's database gone, the token
// and userinfo endpoints answer 503 in JSON, never 500, and no tokens.
func TestDatabaseDownFailsClosed(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		w := newWorld(t, engine)
		c, secret := w.client(t, false)
		_, conf := w.relyingParty(t, c, secret)
		v := oauth2.GenerateVerifier()
		tok, err := conf.Exchange(w.ctx, w.code(t, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		w.env.DB.Close()
		for name, a := range map[string]answer{
			"Token": w.post(t, "/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}, basic(c.ID, secret)),
			"Userinfo": func() answer {
				req, _ := http.NewRequest(http.MethodGet, identitytest.Issuer+"/oauth2/userinfo", nil)
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				return w.do(t, req)
			}(),
		} {
			if a.status != http.StatusServiceUnavailable || a.body["error"] != "server_error" {
				t.Errorf("%s: got %d %q, want 503 server_error", name, a.status, a.raw)
			}
		}
	})
}
