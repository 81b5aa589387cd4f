package parlor_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
)

var (
	totpSecretOnPage = regexp.MustCompile(`<code id="totp-secret">([A-Z2-7=]+)</code>`)
	recoveryCode     = regexp.MustCompile(`<li><code>([a-z2-9]{5}-[a-z2-9]{5})</code></li>`)
	tokenOnPage      = regexp.MustCompile(`value="(plat_[A-Za-z0-9_-]{43})"`)
)

// TestMFAEnrolmentAndSignIn: enrolment shows a server-rendered QR code,
// the secret and recovery codes once; after confirming, sign-in asks for
// a code, refuses a wrong one on the form and accepts a recovery code.
func TestMFAEnrolmentAndSignIn(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("mfa")
	v := newVisitor(t, base)
	v.signUp(email)
	off := v.get("/app/security").expect(t, http.StatusOK, "signing in asks only for your password.", "Set up two-factor authentication")
	for _, later := range []string{"Confirm two-factor authentication", "Turn two-factor authentication off"} {
		if strings.Contains(off.Body, later) {
			t.Errorf("with MFA off the page offers %q", later)
		}
	}
	v.post("/app/security/mfa", url.Values{"password": {"wrong password"}}).expect(t, http.StatusForbidden, "The password is wrong.")
	page := v.post("/app/security/mfa", url.Values{"password": {"correct horse battery"}}).
		expect(t, http.StatusOK, "Scan this code", "Recovery codes")
	if !strings.Contains(page.Body, `src="data:image/png;base64,`) {
		t.Fatal("the page has no QR code image as a data URL")
	}
	if page.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store on a page with a secret", page.Header.Get("Cache-Control"))
	}
	m := totpSecretOnPage.FindStringSubmatch(page.Body)
	codes := recoveryCode.FindAllStringSubmatch(page.Body, -1)
	if m == nil || len(codes) != 10 {
		t.Fatalf("secret %v, %d recovery codes on the page", m, len(codes))
	}
	// A mistyped code keeps the enrolment: the QR code, the secret and
	// the recovery codes are still there to finish with.
	form := url.Values{"code": {"000000"}}
	for _, f := range []string{"secret", "otpauth_url", "recovery_codes"} {
		hidden := regexp.MustCompile(`name="` + f + `" value="([^"]*)"`).FindStringSubmatch(page.Body)
		if hidden == nil {
			t.Fatalf("the confirm form does not carry %s", f)
		}
		form.Set(f, html.UnescapeString(hidden[1]))
	}
	again := v.post("/app/security/mfa/confirm", form).expect(t, http.StatusUnprocessableEntity, "That code is wrong",
		"Scan this code", m[1], codes[0][1], "Off, being set up")
	if !strings.Contains(again.Body, `src="data:image/png;base64,`) {
		t.Errorf("a mistyped code lost the QR code")
	}
	if strings.Contains(again.Body, "Set up two-factor authentication") {
		t.Errorf("during the set-up the page offers Set up again")
	}
	code, err := totp.GenerateCode(m[1], time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if a := v.post("/app/security/mfa/confirm", url.Values{"code": {code}}); a.Status != http.StatusSeeOther {
		t.Fatalf("confirm: %d\n%s", a.Status, visibleText(a.Body))
	}
	on := v.get("/app/security?done=mfa_on").expect(t, http.StatusOK, "Two-factor authentication is on.", "On since", "Turn two-factor authentication off", "Replace your authenticator")
	if strings.Contains(on.Body, "Confirm two-factor authentication") {
		t.Errorf("with MFA on the page still offers Confirm")
	}

	w := newVisitor(t, base)
	step := w.post("/signin", url.Values{"email": {email}, "password": {"correct horse battery"}}).
		expect(t, http.StatusOK, "Enter the 6-digit code")
	if w.cookie != "" {
		t.Fatal("a session before the second factor")
	}
	challenge := regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(step.Body)
	if challenge == nil {
		t.Fatal("no challenge on the MFA step")
	}
	w.post("/signin/mfa", url.Values{"challenge": {challenge[1]}, "code": {"abcde-fghjk"}}).
		expect(t, http.StatusUnprocessableEntity, "That code is wrong or was already used")
	a := w.post("/signin/mfa", url.Values{"challenge": {challenge[1]}, "code": {codes[0][1]}, "next": {"/app"}})
	if a.Status != http.StatusSeeOther || w.cookie == "" {
		t.Fatalf("sign-in with a recovery code: %d, cookie %t\n%s", a.Status, w.cookie != "", visibleText(a.Body))
	}
	w.post("/signin/mfa", url.Values{"challenge": {challenge[1]}, "code": {codes[1][1]}}).
		expect(t, http.StatusGone, "This sign-in has expired")

	// A password reset asks for the second factor too: the link alone
	// must not take an account that has one. The reset ends every
	// session, so the user signs in again (with the factor) to go on.
	anon := newVisitor(t, base)
	anon.post("/reset", url.Values{"email": {email}})
	q, err := url.ParseQuery(strings.TrimPrefix(st.linkIn(t, email, "/reset"), "/reset?"))
	if err != nil {
		t.Fatal(err)
	}
	const newPassword = "another horse battery"
	anon.post("/reset", url.Values{"token": q["token"], "password": {newPassword}}).
		expect(t, http.StatusUnprocessableEntity, "Your account uses two-step sign-in", "Authentication code")
	anon.post("/reset", url.Values{"token": q["token"], "password": {newPassword}, "code": {"abcde-fghjk"}}).
		expect(t, http.StatusUnprocessableEntity, "That code is wrong or was already used")
	if a := anon.post("/reset", url.Values{"token": q["token"], "password": {newPassword}, "code": {codes[3][1]}}); a.Status != http.StatusSeeOther {
		t.Fatalf("reset with a recovery code: %d\n%s", a.Status, visibleText(a.Body))
	}
	v = newVisitor(t, base)
	step = v.post("/signin", url.Values{"email": {email}, "password": {newPassword}}).expect(t, http.StatusOK, "Enter the 6-digit code")
	challenge = regexp.MustCompile(`name="challenge" value="([^"]+)"`).FindStringSubmatch(step.Body)
	if a := v.post("/signin/mfa", url.Values{"challenge": {challenge[1]}, "code": {codes[4][1]}, "next": {"/app"}}); a.Status != http.StatusSeeOther {
		t.Fatalf("sign-in after the reset: %d\n%s", a.Status, visibleText(a.Body))
	}

	if a := v.post("/app/security/mfa/disable", url.Values{"code": {codes[2][1]}}); a.Status != http.StatusSeeOther {
		t.Fatalf("disable: %d\n%s", a.Status, visibleText(a.Body))
	}
	x := newVisitor(t, base)
	if a := x.post("/signin", url.Values{"email": {email}, "password": {newPassword}}); a.Status != http.StatusSeeOther {
		t.Fatalf("sign-in after disabling: %d\n%s", a.Status, visibleText(a.Body))
	}
}

// TestAPIKeysPage: an admin creates a key (its token shown once), sees it
// listed without the token, and revokes it.
func TestAPIKeysPage(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)
	v.signUp(uniqueEmail("keys"))
	acct := personalAccount(t, v)
	path := "/app/accounts/" + acct + "/api_keys"
	v.get(path).expect(t, http.StatusOK, "This account has no API keys.")
	v.post(path, url.Values{"name": {"ci"}}).expect(t, http.StatusUnprocessableEntity, "Please correct the fields marked below.")
	created := v.post(path, url.Values{"name": {"ci"}, "scopes": {"artifacts:fetch", "releases:read"}}).
		expect(t, http.StatusOK, "Your new API key", "artifacts:fetch, releases:read")
	tok := tokenOnPage.FindStringSubmatch(created.Body)
	if tok == nil {
		t.Fatal("no token on the page that created the key")
	}
	list := v.get(path).expect(t, http.StatusOK, "ci", "never")
	if strings.Contains(list.Body, tok[1]) {
		t.Fatal("the token is shown again")
	}
	id := regexp.MustCompile(`/api_keys/([0-9a-f-]{36})/revoke`).FindStringSubmatch(list.Body)
	if id == nil {
		t.Fatal("no revoke form")
	}
	a := v.post(path+"/"+id[1]+"/revoke", nil)
	if a.Status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", a.Status)
	}
	v.get(a.location()).expect(t, http.StatusOK, "The API key was revoked", "This account has no API keys.")
	if a := newVisitor(t, base).get(path); a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/signin") {
		t.Errorf("signed out: %d to %q, want 303 to sign in", a.Status, a.location())
	}
}
