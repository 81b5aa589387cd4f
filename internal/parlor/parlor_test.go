package parlor_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/parlor"
)

func TestProbes(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	tests := []struct {
		path string
		want map[string]string
	}{
		{"/healthz", map[string]string{"status": "ok"}},
		{"/readyz", map[string]string{"status": "ok", "deps": "none"}},
	}
	for _, tt := range tests {
		a := v.get(tt.path)
		if a.Status != http.StatusOK {
			t.Fatalf("%s: status %d, want 200", tt.path, a.Status)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(a.Body), &got); err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if len(got) != len(tt.want) || got["status"] != tt.want["status"] || got["deps"] != tt.want["deps"] {
			t.Errorf("%s = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	for _, path := range []string{"/signin", "/signup", "/static/style.css", "/no/such/page", "/operator"} {
		a := v.get(path)
		csp := a.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy = %q, want self-only script and no framing", path, csp)
		}
		if got := a.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options = %q, want DENY", path, got)
		}
		if got := a.Header.Get("Referrer-Policy"); got != "same-origin" {
			t.Errorf("%s: Referrer-Policy = %q, want same-origin", path, got)
		}
	}
}

func TestPagesHaveNoInlineScript(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	// expect checks every page the handler tests render; these are the
	// pages of a signed-out visitor.
	for _, path := range []string{"/", "/signin", "/signup", "/invitations/accept?token=abc", "/nowhere"} {
		a := v.get(path)
		a.expect(t, a.Status)
	}
}

func TestSignUpSignInSignOut(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("ada")

	v := newVisitor(t, base)
	a := v.post("/signup", url.Values{"email": {email}, "password": {"correct horse battery"}})
	if a.Status != http.StatusSeeOther || a.location() != "/app" {
		t.Fatalf("sign up: %d to %q, want 303 to /app\n%s", a.Status, a.location(), visibleText(a.Body))
	}
	cookie := a.Header.Get("Set-Cookie")
	for _, want := range []string{parlor.CookieName + "=", "Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("session cookie %q lacks %q", cookie, want)
		}
	}
	if strings.Contains(strings.ToLower(cookie), "domain=") {
		t.Errorf("a __Host- cookie has no Domain: %q", cookie)
	}
	v.get("/app").expect(t, http.StatusOK, "Your accounts", email, "personal", "owner")
	if got := v.get("/").location(); got != "/app" {
		t.Errorf("the landing page of a signed-in user redirects to %q, want /app", got)
	}

	token := v.cookie
	a = v.post("/signout", nil)
	if a.Status != http.StatusSeeOther || a.location() != "/" || v.cookie != "" {
		t.Fatalf("sign out: %d to %q, cookie kept %t", a.Status, a.location(), v.cookie != "")
	}
	v.cookie = token // the ended session is refused from now on
	if got := v.get("/app"); got.Status != http.StatusSeeOther || got.location() != "/signin?next=%2Fapp" {
		t.Errorf("after sign out /app is %d to %q, want 303 to the sign-in page", got.Status, got.location())
	}

	v = newVisitor(t, base)
	a = v.post("/signin", url.Values{"email": {email}, "password": {"correct horse battery"}, "next": {"/app/accounts"}})
	if a.Status != http.StatusSeeOther || a.location() != "/app/accounts" || v.cookie == "" {
		t.Fatalf("sign in: %d to %q", a.Status, a.location())
	}
	v.get("/").expect(t, http.StatusSeeOther)
}

func TestSignInAndSignUpRefusalsInWords(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	taken := uniqueEmail("taken")
	newVisitor(t, base).signUp(taken)

	tests := []struct {
		name   string
		path   string
		form   url.Values
		status int
		want   string
	}{
		{"ShortPassword", "/signup", url.Values{"email": {uniqueEmail("b")}, "password": {"short"}}, 422, "at least 8 characters"},
		{"MalformedEmail", "/signup", url.Values{"email": {"not-an-address"}, "password": {"correct horse battery"}}, 422, "Enter a valid email address"},
		{"TakenEmail", "/signup", url.Values{"email": {taken}, "password": {"correct horse battery"}}, 409, "cannot be registered"},
		{"WrongPassword", "/signin", url.Values{"email": {taken}, "password": {"wrong password!"}}, 401, "The email address or the password is wrong."},
		{"UnknownAddress", "/signin", url.Values{"email": {uniqueEmail("nobody")}, "password": {"whatever it is"}}, 401, "The email address or the password is wrong."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVisitor(t, base)
			a := v.post(tt.path, tt.form).expect(t, tt.status, tt.want)
			if v.cookie != "" {
				t.Errorf("a refused form set the session cookie")
			}
			if strings.Contains(a.Body, `"code"`) || strings.Contains(a.Body, "problem+json") {
				t.Errorf("the page shows raw JSON:\n%s", a.Body)
			}
			if email := tt.form.Get("email"); !strings.Contains(a.Body, `value="`+email+`"`) {
				t.Errorf("the refused form does not keep the address %q", email)
			}
		})
	}
}

func TestRefusalNamesTheTraceItTookAcrossThePlatform(t *testing.T) {
	st := startStack(t)
	v := newVisitor(t, startParlor(t, st.GatewayURL))
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", v.base+"/signup", strings.NewReader(url.Values{"email": {uniqueEmail("t")}, "password": {"short"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	// identity answers the 422 in the page's trace only if parlor and the
	// gateway carried it there.
	// The refusal is in words, so it shows no reference; the trace is
	// kept in the page's markup for support.
	a := v.send(req).expect(t, http.StatusUnprocessableEntity, "at least 8 characters")
	if !strings.Contains(a.Body, `data-trace="`+trace+`"`) || strings.Contains(visibleText(a.Body), "Reference") {
		t.Errorf("the refusal does not carry the trace %s out of sight:\n%s", trace, a.Body)
	}
}

func TestLockedUserToldToWait(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("locked")
	newVisitor(t, base).signUp(email)
	v := newVisitor(t, base)
	wrong := url.Values{"email": {email}, "password": {"not the password"}}
	for range 5 {
		v.post("/signin", wrong).expect(t, http.StatusUnauthorized)
	}
	v.post("/signin", url.Values{"email": {email}, "password": {"correct horse battery"}}).
		expect(t, http.StatusLocked, "Too many failed sign-ins")
	if v.cookie != "" {
		t.Errorf("a locked user was signed in")
	}
}

func TestCrossOriginFormsRefused(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	owner := newVisitor(t, base)
	owner.signUp(uniqueEmail("victim"))

	tests := []struct {
		name    string
		headers map[string]string
	}{
		{"CrossSiteFetch", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"SameSiteOtherOrigin", map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"ForeignOriginHeader", map[string]string{"Origin": "https://evil.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/signin", "/signout", "/app/accounts", "/reset", "/app/settings/email", "/app/settings/verification"} {
				req, _ := http.NewRequest("POST", base+path, strings.NewReader("name=Evil+Corp&email=a%40b.example&password=xxxxxxxxxx"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				a := owner.send(req)
				if a.Status != http.StatusForbidden {
					t.Errorf("POST %s: status %d, want 403", path, a.Status)
				}
			}
		})
	}
	// The session survived every forged sign-out, and no team was made.
	page := owner.get("/app").expect(t, http.StatusOK, "Your accounts")
	if strings.Contains(page.Body, "Evil Corp") {
		t.Errorf("a cross-origin form created an account")
	}
}

func TestSignedOutVisitorsAreSentToSignIn(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	tests := []struct{ path, location string }{
		{"/app", "/signin?next=%2Fapp"},
		{"/app/accounts/0b0e5f0c-0000-4000-8000-000000000000/downloads", "/signin?next=%2Fapp%2Faccounts%2F0b0e5f0c-0000-4000-8000-000000000000%2Fdownloads"},
	}
	for _, tt := range tests {
		a := v.get(tt.path)
		if a.Status != http.StatusSeeOther || a.location() != tt.location {
			t.Errorf("GET %s: %d to %q, want 303 to %q", tt.path, a.Status, a.location(), tt.location)
		}
	}
	v.get("/").expect(t, http.StatusOK, "Create an account", "Sign in")
	v.get("/signin?next=/app").expect(t, http.StatusOK, "Sign in")
	v.get("/invitations/accept?token=abc").expect(t, http.StatusOK, "To accept, sign in")
}

func TestSignInKeepsTheDestinationOnThisSite(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("next")
	newVisitor(t, base).signUp(email)
	tests := []struct{ next, want string }{
		{"/app/accounts", "/app/accounts"},
		{"//evil.example/x", "/app"},
		{"https://evil.example/", "/app"},
		{"/\\evil.example", "/app"},
		{"", "/app"},
	}
	for _, tt := range tests {
		a := newVisitor(t, base).post("/signin", url.Values{"email": {email}, "password": {"correct horse battery"}, "next": {tt.next}})
		if a.Status != http.StatusSeeOther || a.location() != tt.want {
			t.Errorf("next=%q: %d to %q, want 303 to %q", tt.next, a.Status, a.location(), tt.want)
		}
	}
}

func TestUnavailablePlatformSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	v := newVisitor(t, startParlor(t, dead))
	v.post("/signin", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}}).
		expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
	v.post("/signup", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}}).
		expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
	v.cookie = "a-session-token"
	v.get("/app").expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
	v.post("/signout", nil).expect(t, http.StatusServiceUnavailable, "unavailable")
	if v.cookie == "" {
		t.Errorf("a sign-out the platform never saw dropped the cookie")
	}
}

func TestStaticAssetsAreEmbedded(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	tests := []struct {
		path, contentType string
		status            int
	}{
		{"/static/style.css", "text/css", 200},
		{"/static/copy.js", "text/javascript", 200},
		{"/static/", "", 404},
		{"/static/nothing.css", "", 404},
	}
	for _, tt := range tests {
		a := v.get(tt.path)
		if a.Status != tt.status || !strings.HasPrefix(a.Header.Get("Content-Type"), tt.contentType) {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, a.Status, a.Header.Get("Content-Type"), tt.status, tt.contentType)
		}
	}
}

func TestOversizedFormRefused(t *testing.T) {
	v := newVisitor(t, startParlor(t, "http://127.0.0.1:1"))
	big := url.Values{"email": {strings.Repeat("a", 70<<10) + "@example.com"}, "password": {"correct horse battery"}}
	v.post("/signin", big).expect(t, http.StatusRequestEntityTooLarge, "This form is too large to send.")
}
