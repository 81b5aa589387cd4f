package parlor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"
	"golang.org/x/oauth2"

	"github.com/platformco/platform/internal/parlor"
)

const oauthPassword = "correct horse battery"

// relyingParty is an application registered by a user of the stack.
type relyingParty struct {
	Email, Token, ClientID, Secret, RedirectURI string
}

// registerApp signs a new user up through the API and registers an
// application in their personal account, as the README's curl does.
func registerApp(t *testing.T, st *stack, name, redirectURI string) relyingParty {
	t.Helper()
	ctx := context.Background()
	api := parlor.NewClient(st.GatewayURL, 5*time.Second)
	email := uniqueEmail("rp")
	if err := api.Register(ctx, email, oauthPassword); err != nil {
		t.Fatal(err)
	}
	sess, err := api.SignIn(ctx, email, oauthPassword)
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := api.Accounts(ctx, sess.Token)
	if err != nil || len(accounts) == 0 {
		t.Fatalf("accounts: %v %v", accounts, err)
	}
	body, _ := json.Marshal(map[string]any{"name": name, "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "scopes": []string{"openid", "email", "profile", "accounts"}})
	req, _ := http.NewRequest("POST", st.GatewayURL+"/v1/accounts/"+accounts[0].ID+"/oidc_clients", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register the application: %d %v", resp.StatusCode, err)
	}
	return relyingParty{Email: email, Token: sess.Token, ClientID: c.ClientID, Secret: c.ClientSecret, RedirectURI: redirectURI}
}

// startAuthorization opens the authorization endpoint as the
// application's link does and returns the request id the provider sends
// the browser to the sign-in page with.
func startAuthorization(t *testing.T, st *stack, rp relyingParty, opts ...oauth2.AuthCodeOption) string {
	t.Helper()
	conf := oauth2.Config{ClientID: rp.ClientID, RedirectURL: rp.RedirectURI, Scopes: []string{"openid", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: st.GatewayURL + "/oauth2/authorize"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(conf.AuthCodeURL("state-1", append(opts, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))...))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Path != "/oauth/sign-in" || loc.Query().Get("authRequestID") == "" {
		t.Fatalf("authorize: %d to %q, want the web app's sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("authRequestID")
}

var callbackLocation = regexp.MustCompile(`^/oauth2/authorize/callback\?id=[0-9a-f-]{36}&k=[A-Za-z0-9_-]{43}$`)

func TestOAuthSignInAndConsentPages(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	rp := registerApp(t, st, "Acme Shop", "http://127.0.0.1:9/callback")

	t.Run("SignInThenConsentThenBackToTheProvider", func(t *testing.T) {
		id := startAuthorization(t, st, rp)
		v := newVisitor(t, base)
		v.get("/oauth/sign-in?authRequestID="+id).expect(t, http.StatusOK, "Sign in", "continue to Acme Shop")
		v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {"wrong password"}}).
			expect(t, http.StatusUnauthorized, "The email address or the password is wrong.", "continue to Acme Shop")
		a := v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {oauthPassword}})
		if a.Status != http.StatusSeeOther || a.location() != "/oauth/consent?authRequestID="+id || v.cookie == "" {
			t.Fatalf("sign in: %d to %q, cookie %t", a.Status, a.location(), v.cookie != "")
		}
		page := v.get(a.location()).expect(t, http.StatusOK, "Allow Acme Shop?", rp.Email, "Know who you are", "See your email address")
		if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1:9;") {
			t.Errorf("consent page policy %q: the form's redirects must reach the application's origin and nothing else", csp)
		}
		if strings.Contains(page.Body, "See your name") {
			t.Errorf("the consent page names a scope the application did not ask for")
		}
		// A signed-in user goes from the sign-in page straight to consent.
		if got := v.get("/oauth/sign-in?authRequestID=" + id); got.Status != http.StatusSeeOther || got.location() != "/oauth/consent?authRequestID="+id {
			t.Errorf("signed in, the sign-in page: %d to %q, want the consent page", got.Status, got.location())
		}
		a = v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}})
		if a.Status != http.StatusSeeOther || !callbackLocation.MatchString(a.location()) {
			t.Fatalf("allow: %d to %q, want the provider's callback on this origin", a.Status, a.location())
		}
		// The gateway sends the callback to identity, which redirects to
		// the application with a code and the state.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(st.GatewayURL + a.location())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back, _ := url.Parse(resp.Header.Get("Location"))
		if back == nil || !strings.HasPrefix(back.String(), rp.RedirectURI+"?") || back.Query().Get("code") == "" || back.Query().Get("state") != "state-1" {
			t.Errorf("callback: %d to %q, want the application with a code", resp.StatusCode, resp.Header.Get("Location"))
		}
		v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}}).
			expect(t, http.StatusNotFound, "expired or was already answered")

		// The consent is remembered: the next request for the same scopes
		// goes from the sign-in page through consent straight back to the
		// provider, with no page; prompt=consent shows the page again.
		next := startAuthorization(t, st, rp)
		if got := v.get("/oauth/sign-in?authRequestID=" + next); got.Status != http.StatusSeeOther || got.location() != "/oauth/consent?authRequestID="+next {
			t.Fatalf("remembered, the sign-in page: %d to %q, want the consent step", got.Status, got.location())
		}
		if got := v.get("/oauth/consent?authRequestID=" + next); got.Status != http.StatusSeeOther || !callbackLocation.MatchString(got.location()) {
			t.Errorf("remembered, the consent step: %d to %q, want the provider's callback without a page", got.Status, got.location())
		}
		again := startAuthorization(t, st, rp, oauth2.SetAuthURLParam("prompt", "consent"))
		v.get("/oauth/consent?authRequestID="+again).expect(t, http.StatusOK, "Allow Acme Shop?")
	})

	t.Run("DenyGoesBackWithoutACode", func(t *testing.T) {
		id := startAuthorization(t, st, rp)
		v := newVisitor(t, base)
		v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {oauthPassword}})
		a := v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"deny"}})
		if a.Status != http.StatusSeeOther || !callbackLocation.MatchString(a.location()) {
			t.Fatalf("deny: %d to %q", a.Status, a.location())
		}
	})

	t.Run("MFAStepComesBackToConsent", func(t *testing.T) {
		// A user who never allowed the application sees the page.
		rp := registerApp(t, st, "Acme Shop", "http://127.0.0.1:9/callback")
		api := parlor.NewClient(st.GatewayURL, 5*time.Second)
		en, err := api.EnrolTOTP(context.Background(), rp.Token, oauthPassword)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := totp.GenerateCode(en.Secret, time.Now())
		if err := api.ConfirmTOTP(context.Background(), rp.Token, code); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = api.DisableTOTP(context.Background(), rp.Token, en.RecoveryCodes[1]) })
		id := startAuthorization(t, st, rp)
		v := newVisitor(t, base)
		step := v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {oauthPassword}}).
			expect(t, http.StatusOK, "Enter the 6-digit code")
		if v.cookie != "" {
			t.Fatal("a session before the second factor")
		}
		challenge := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(step.Body)
		if challenge == nil {
			t.Fatal("no challenge on the MFA step")
		}
		a := v.post("/signin/mfa", url.Values{"challenge": {challenge[1]}, "code": {en.RecoveryCodes[0]}, "next": {"/oauth/consent?authRequestID=" + id}})
		if a.Status != http.StatusSeeOther || a.location() != "/oauth/consent?authRequestID="+id || v.cookie == "" {
			t.Fatalf("MFA step: %d to %q", a.Status, a.location())
		}
		v.get(a.location()).expect(t, http.StatusOK, "Allow Acme Shop?")
	})

	t.Run("Refusals", func(t *testing.T) {
		signedIn := newVisitor(t, base)
		signedIn.post("/signin", url.Values{"email": {rp.Email}, "password": {oauthPassword}})
		unknown := uuid.NewString()
		tests := []struct {
			name   string
			v      *visitor
			method string
			path   string
			form   url.Values
			status int
			text   string
		}{
			{"MalformedID", newVisitor(t, base), "GET", "/oauth/sign-in?authRequestID=..%2F..%2Fevil", nil, 400, "This sign-in link is not valid"},
			{"MissingID", newVisitor(t, base), "GET", "/oauth/sign-in", nil, 400, "This sign-in link is not valid"},
			{"OpenRedirectAttempt", newVisitor(t, base), "GET", "/oauth/sign-in?authRequestID=%2F%2Fevil.example", nil, 400, "This sign-in link is not valid"},
			{"UnknownID", newVisitor(t, base), "GET", "/oauth/sign-in?authRequestID=" + unknown, nil, 404, "expired or was already answered"},
			{"UnknownIDSignIn", newVisitor(t, base), "POST", "/oauth/sign-in", url.Values{"authRequestID": {unknown}, "email": {rp.Email}, "password": {oauthPassword}}, 404, "expired or was already answered"},
			{"UnknownIDConsent", signedIn, "GET", "/oauth/consent?authRequestID=" + unknown, nil, 404, "expired or was already answered"},
			{"MalformedIDConsent", signedIn, "POST", "/oauth/consent", url.Values{"authRequestID": {"x"}, "decision": {"allow"}}, 400, "This sign-in link is not valid"},
			{"NoDecision", signedIn, "POST", "/oauth/consent", url.Values{"authRequestID": {unknown}, "decision": {"maybe"}}, 400, "Choose Allow or Deny"},
			{"CallbackRefusedExpired", newVisitor(t, base), "GET", "/oauth/error?reason=expired", nil, 404, "has expired or was already used"},
			{"CallbackRefusedBrowser", newVisitor(t, base), "GET", "/oauth/error?reason=browser", nil, 403, "finished in another browser window"},
			{"CallbackRefusedUnknownReason", newVisitor(t, base), "GET", "/oauth/error?reason=%3Cscript%3E", nil, 400, "This sign-in was not finished"},
			{"SignedOutOfTheApplication", newVisitor(t, base), "GET", "/oauth/signed-out", nil, 200, "You have signed out of the application"},
			{"SignedOutStillSignedInHere", signedIn, "GET", "/oauth/signed-out", nil, 200, "still signed in to the platform"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var a answer
				if tt.method == "GET" {
					a = tt.v.get(tt.path)
				} else {
					a = tt.v.post(tt.path, tt.form)
				}
				a.expect(t, tt.status, tt.text)
				if a.location() != "" {
					t.Errorf("redirected to %q, want the error page here", a.location())
				}
			})
		}
	})

	t.Run("SignedOutConsentGoesToTheRequestsSignIn", func(t *testing.T) {
		id := startAuthorization(t, st, rp)
		v := newVisitor(t, base)
		for _, a := range []answer{
			v.get("/oauth/consent?authRequestID=" + id),
			v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}}),
		} {
			if a.Status != http.StatusSeeOther || a.location() != "/oauth/sign-in?authRequestID="+id {
				t.Errorf("signed out: %d to %q, want the request's sign-in page", a.Status, a.location())
			}
		}
	})

	t.Run("CrossOriginFormsRefused", func(t *testing.T) {
		rp := registerApp(t, st, "Acme Shop", "http://127.0.0.1:9/callback")
		id := startAuthorization(t, st, rp)
		v := newVisitor(t, base)
		v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {oauthPassword}})
		for _, path := range []string{"/oauth/sign-in", "/oauth/consent"} {
			form := url.Values{"authRequestID": {id}, "decision": {"allow"}, "email": {rp.Email}, "password": {oauthPassword}}
			req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			v.send(req).expect(t, http.StatusForbidden, "sent from another site")
		}
		// The forged consent did not answer the request.
		v.get("/oauth/consent?authRequestID="+id).expect(t, http.StatusOK, "Allow Acme Shop?")
	})
}

// TestOAuthPromptAndFreshSignIn: prompt=login shows the sign-in form to a
// signed-in browser, and prompt=none shows no page at all, ending the
// request at the application with login_required or consent_required.
func TestOAuthPromptAndFreshSignIn(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	rp := registerApp(t, st, "Acme Shop", "http://127.0.0.1:9/callback")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signedIn := func(t *testing.T) *visitor {
		v := newVisitor(t, base)
		if a := v.post("/signin", url.Values{"email": {rp.Email}, "password": {oauthPassword}}); v.cookie == "" {
			t.Fatalf("sign in: %d, no session", a.Status)
		}
		return v
	}

	t.Run("PromptLoginAsksASignedInUserToSignInAgain", func(t *testing.T) {
		v := signedIn(t)
		id := startAuthorization(t, st, rp, oauth2.SetAuthURLParam("prompt", "login"))
		v.get("/oauth/sign-in?authRequestID="+id).expect(t, http.StatusOK, "Sign in", "continue to Acme Shop")
		if a := v.get("/oauth/consent?authRequestID=" + id); a.Status != http.StatusSeeOther || a.location() != "/oauth/sign-in?authRequestID="+id {
			t.Errorf("consent with the earlier session: %d to %q, want the sign-in page", a.Status, a.location())
		}
		if a := v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}}); a.Status != http.StatusSeeOther || a.location() != "/oauth/sign-in?authRequestID="+id {
			t.Errorf("allow with the earlier session: %d to %q, want the sign-in page", a.Status, a.location())
		}
		a := v.post("/oauth/sign-in", url.Values{"authRequestID": {id}, "email": {rp.Email}, "password": {oauthPassword}})
		if a.Status != http.StatusSeeOther || a.location() != "/oauth/consent?authRequestID="+id {
			t.Fatalf("sign in again: %d to %q", a.Status, a.location())
		}
		v.get(a.location()).expect(t, http.StatusOK, "Allow Acme Shop?")
		if a := v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}}); a.Status != http.StatusSeeOther || !callbackLocation.MatchString(a.location()) {
			t.Errorf("allow after signing in again: %d to %q, want the provider's callback", a.Status, a.location())
		}
	})

	// rp's user allowed rp above; fresh is an application they never
	// allowed.
	fresh := registerApp(t, st, "Other Shop", "http://127.0.0.1:9/callback")
	for _, tt := range []struct {
		name string
		v    func(t *testing.T) *visitor
		app  relyingParty
		// want is the error the application gets, "" for a code.
		want string
	}{
		{"PromptNoneSignedOut", func(t *testing.T) *visitor { return newVisitor(t, base) }, rp, "login_required"},
		{"PromptNoneSignedInWithoutConsent", signedIn, fresh, "consent_required"},
		{"PromptNoneSignedInConsented", signedIn, rp, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v(t)
			id := startAuthorization(t, st, tt.app, oauth2.SetAuthURLParam("prompt", "none"))
			a := v.get("/oauth/sign-in?authRequestID=" + id)
			if a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/oauth2/authorize/callback?") {
				t.Fatalf("sign-in page: %d to %q, want the provider's callback", a.Status, a.location())
			}
			resp, err := noFollow.Get(st.GatewayURL + a.location())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			back, _ := url.Parse(resp.Header.Get("Location"))
			if back == nil || !strings.HasPrefix(back.String(), rp.RedirectURI+"?") || back.Query().Get("error") != tt.want || back.Query().Get("state") != "state-1" ||
				(back.Query().Get("code") == "") != (tt.want != "") {
				t.Errorf("callback: %d to %q, want the application with error=%q (a code when none) and the state", resp.StatusCode, resp.Header.Get("Location"), tt.want)
			}
		})
	}
}

// TestConnectedApplications: the settings page lists the applications the
// user allowed, and disconnecting one forgets the consent (its next
// request shows the consent page) and revokes its tokens.
func TestConnectedApplications(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	rp := registerApp(t, st, "Acme Shop", "http://127.0.0.1:9/callback")
	v := newVisitor(t, base)
	v.get("/app/settings").expect(t, http.StatusSeeOther)
	if v.post("/signin", url.Values{"email": {rp.Email}, "password": {oauthPassword}}); v.cookie == "" {
		t.Fatal("sign in: no session")
	}
	v.get("/app/settings").expect(t, http.StatusOK, "Connected applications", "No application signs you in")

	id := startAuthorization(t, st, rp)
	v.get("/oauth/consent?authRequestID="+id).expect(t, http.StatusOK, "Allow Acme Shop?")
	if a := v.post("/oauth/consent", url.Values{"authRequestID": {id}, "decision": {"allow"}}); !callbackLocation.MatchString(a.location()) {
		t.Fatalf("allow: %d to %q", a.Status, a.location())
	}
	page := v.get("/app/settings").expect(t, http.StatusOK, "Acme Shop", "See your email address", "Disconnect Acme Shop")
	if !strings.Contains(page.Body, `action="/app/settings/applications/`+rp.ClientID+`/disconnect"`) {
		t.Fatal("the settings page has no disconnect form for the application")
	}

	// A cross-site form cannot disconnect it.
	req, _ := http.NewRequest("POST", base+"/app/settings/applications/"+rp.ClientID+"/disconnect", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	v.send(req).expect(t, http.StatusForbidden, "sent from another site")
	v.get("/app/settings").expect(t, http.StatusOK, "Disconnect Acme Shop")

	a := v.post("/app/settings/applications/"+rp.ClientID+"/disconnect", nil)
	if a.Status != http.StatusSeeOther || a.location() != "/app/settings?done=disconnected" {
		t.Fatalf("disconnect: %d to %q", a.Status, a.location())
	}
	page = v.get(a.location()).expect(t, http.StatusOK, "The application is disconnected", "No application signs you in")
	if strings.Contains(page.Body, "Disconnect Acme Shop") {
		t.Error("the disconnected application is still listed")
	}
	v.post("/app/settings/applications/"+rp.ClientID+"/disconnect", nil).expect(t, http.StatusNotFound)
	v.post("/app/settings/applications/not-a-uuid/disconnect", nil).expect(t, http.StatusNotFound)

	// Its next request asks again.
	id = startAuthorization(t, st, rp)
	v.get("/oauth/consent?authRequestID="+id).expect(t, http.StatusOK, "Allow Acme Shop?")
}
