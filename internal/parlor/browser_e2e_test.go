//go:build e2e

package parlor_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/testutil"
)

// devPorts are the ports `platform dev` listens on.
var devPorts = []string{"8080", "8081", "8082", "8083", "8084", "8085", "8086"}

// startDev runs the real binary's `platform dev` on a fresh data
// directory and returns the directory and the app's base URL: the
// gateway's, when it routes the pages to parlor, else parlor's own port.
func startDevForBrowser(t *testing.T) (dataDir, base string) {
	t.Helper()
	for _, port := range devPorts {
		ln, err := net.Listen("tcp", ":"+port)
		if err != nil {
			t.Skipf("port %s is taken (a platform dev already running?): %v", port, err)
		}
		ln.Close()
	}
	bin := e2e.Binary(t)
	dataDir = filepath.Join(t.TempDir(), "data")
	dev := exec.Command(bin, "dev", "--data", dataDir)
	logs := &logtest.Buffer{}
	dev.Stdout, dev.Stderr = logs, logs
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = dev.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = dev.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = dev.Process.Kill()
			<-done
			t.Errorf("platform dev did not stop on Ctrl-C")
		}
		if t.Failed() {
			t.Logf("platform dev output:\n%s", logs.String())
		}
	})
	testutil.Eventually(t, 60*time.Second, "platform dev to serve parlor", func() bool {
		return pageAnswers("http://localhost:8085/signin")
	})
	if pageAnswers("http://localhost:8080/signin") {
		return dataDir, "http://localhost:8080"
	}
	t.Log("the gateway does not route pages to parlor (no PARLOR_URL route on this branch): the browser talks to parlor on :8085")
	return dataDir, "http://localhost:8085"
}

func pageAnswers(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `action="/signin"`)
}

// signUp fills the sign-up form of the page the browser is on.
func signUpActions(email string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.SendKeys(chromedp.CSS(`#password`), "correct horse battery"),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)),
	}
}

func submit(form string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(form + ` button[type=submit]`))
}

// colorScheme makes the page see prefers-color-scheme as scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// fitsWidth fails the test when the page scrolls sideways: a phone must
// read it without panning.
func (b *browser) fitsWidth(step string) {
	b.t.Helper()
	fits, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
	if err != nil || !fits {
		b.t.Errorf("%s, %s: the page is wider than the screen (%v)", b.name, step, err)
	}
}

var uuidIn = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestBrowserJourney walks parlor.md §4 in a real browser against the
// real binary: the customer journey, then the operator's reconciliation.
// Screenshots of every step are kept in the test's artifact directory
// (go test -artifacts keeps them; otherwise they go with the test).
func TestBrowserJourney(t *testing.T) {
	exe := findBrowser(t)
	dataDir, base := startDevForBrowser(t)
	shots := t.ArtifactDir()
	step := 0
	axeScript, err := os.ReadFile(filepath.Join("testdata", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	axe := string(axeScript)
	t.Logf("screenshots: %s", shots)

	owner := newBrowser(t, exe, "owner", base, shots, axe, &step)
	owner.do("landing", []string{"Your software, licensed and delivered"}, chromedp.Navigate(base+"/"))
	owner.do("signin-form", []string{"Sign in", "New here?"}, chromedp.Navigate(base+"/signin"))
	owner.do("signup-form", []string{"Create your account"}, chromedp.Click(chromedp.CSS(`main a[href^="/signup"]`)))
	owner.do("signup", []string{"Your accounts", "owner@example.com"}, signUpActions("owner@example.com")...)
	owner.do("create-team", []string{"The team account was created.", "Acme Rockets"},
		chromedp.SendKeys(chromedp.CSS(`#name`), "Acme Rockets"),
		submit(`form[action="/app/accounts"]`))
	team := uuidIn.FindString(owner.location())
	if team == "" {
		t.Fatalf("the team page's address has no account id: %s", owner.location())
	}
	// A webhook endpoint on the team hears the member join; it refuses
	// the first deliveries, so the log shows a failure to retry.
	hook := startHookReceiver(t)
	owner.do("webhook", []string{"The endpoint was created.", "shown only now", hook.URL},
		chromedp.Navigate(base+"/app/accounts/"+team+"/webhooks"),
		chromedp.SendKeys(chromedp.CSS(`#url`), hook.URL),
		chromedp.Click(chromedp.CSS(`input[value="identity.member.joined"]`)),
		submit(`form[action$="/webhooks"]`))
	hookSecret := owner.value(`#webhook-secret`)
	owner.do("invite", []string{"The invitation was emailed.", "Pending invitations", "member@example.com"},
		chromedp.Navigate(base+"/app/accounts/"+team),
		chromedp.SendKeys(chromedp.CSS(`#invite-email`), "member@example.com"),
		submit(`form[action$="/invitations"]`))
	// Reloading the answer does not invite twice: it was a redirect.
	owner.do("invite-reloaded", []string{"Pending invitations"}, chromedp.Reload())
	if n, _ := chromedp.Run(owner.ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[action$="/resend"]').length`)); n != 1 {
		t.Errorf("after a reload %d invitations are pending, want 1", n)
	}
	link := mailboxLink(t, "member@example.com", "/invitations/accept")
	if !strings.HasPrefix(link, base+"/invitations/accept?token=") {
		t.Fatalf("invitation link = %q, want one on %s", link, base)
	}

	member := newBrowser(t, exe, "member", base, shots, axe, &step)
	member.do("open-invitation", []string{"owner@example.com invites member@example.com to join Acme Rockets as a member.", "To accept, sign in"},
		chromedp.Navigate(link))
	member.do("signup-form-from-invitation", []string{"Create your account"},
		chromedp.Click(chromedp.CSS(`main a[href^="/signup?"]`)))
	if v, _ := chromedp.Run(member.ctx, chromedp.Evaluate[string](`document.getElementById("email").value`)); v != "member@example.com" {
		t.Errorf("the sign-up from the invitation is prefilled with %q, want the invited address", v)
	}
	member.do("signup-from-invitation", []string{"signed in as member@example.com", "Join Acme Rockets"},
		chromedp.SendKeys(chromedp.CSS(`#password`), "correct horse battery"),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	// Only a verified holder of the invited address accepts: the link
	// comes from the quick start's local mailbox.
	member.do("open-verification-link", []string{"Verify my address"}, chromedp.Navigate(mailboxLink(t, "member@example.com", "/verify")))
	member.do("verify-from-mailbox", []string{"Your email address is verified"}, submit(`form[action="/verify"]`))
	member.do("back-to-invitation", []string{"signed in as member@example.com"}, chromedp.Navigate(link))
	member.do("accept", []string{"You joined the account.", "member@example.com (you)", "Acme Rockets"},
		submit(`form[action="/invitations/accept"]`))

	testutil.Eventually(t, 30*time.Second, "the member's join delivered to the webhook", func() bool {
		return len(hook.answered(http.StatusInternalServerError)) > 0
	})
	owner.do("delivery-failed", []string{"identity.member.joined", "HTTP 500"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/webhooks"),
		chromedp.Click(chromedp.CSS(`a[href$="/deliveries"]`)))
	hook.accept()
	owner.do("delivery-retry", []string{"The delivery is due again now"}, submit(`form[action$="/retry"]`))
	testutil.Eventually(t, 30*time.Second, "the retried delivery accepted", func() bool {
		return len(hook.answered(http.StatusNoContent)) > 0
	})
	if got := hook.answered(http.StatusNoContent)[0]; !signedWith(got, hookSecret) {
		t.Errorf("the delivery is not signed with the secret the page showed: %q", got.Signature)
	}
	owner.do("delivery-succeeded", []string{"succeeded", "HTTP 204"}, chromedp.Reload())
	owner.do("preferences", []string{"Notifications", "Product updates"}, chromedp.Navigate(base+"/app/preferences"))
	owner.do("preferences-saved", []string{"Your notification preferences were saved."},
		chromedp.Click(chromedp.CSS(`#product_updates`)), submit(`form[action="/app/preferences"]`))
	checkMailbox(t)

	owner.do("members", []string{"member@example.com", "member"}, chromedp.Navigate(base+"/app/accounts/"+team))
	owner.do("entitlements", []string{"holds no entitlement yet", "Claim the kit"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/entitlements"))
	owner.do("claim-kit", []string{"The kit is yours", "kit"}, submit(`form[action$="/claim"]`))

	operator := newBrowser(t, exe, "operator", base, shots, axe, &step)
	operator.do("operator-signup-form", []string{"Create your account"}, chromedp.Navigate(base+"/signup"))
	operator.do("operator-signup", []string{"Your accounts"}, signUpActions("operator@example.com")...)
	e2e.MustRun(t, e2e.Env{"DATABASE_URL": "sqlite:" + filepath.Join(dataDir, "identity.db")},
		"identity", "staff", "add", "operator@example.com")
	operator.do("console", []string{"Operator console", "Staff directory"}, chromedp.Navigate(base+"/operator"))
	operator.do("directory", []string{"owner@example.com"},
		chromedp.Navigate(base+"/operator/users"),
		chromedp.SendKeys(chromedp.CSS(`#query`), "owner@"),
		submit(`form[action="/operator/users"]`))
	operator.do("grant-form", []string{"Before granting: read the payment"}, chromedp.Navigate(base+"/operator/grant"))
	operator.do("grant-rows", []string{"2. The account's rows now", "kit", "claim"},
		chromedp.SendKeys(chromedp.CSS(`#lookup`), team),
		submit(`form[action="/operator/grant"][method="get"]`))
	grantPlatform := []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.CSS(`#product`), "platform"),
		chromedp.SendKeys(chromedp.CSS(`#reference`), "pi_3Kx9"),
		submit(`form[action="/operator/grant"][method="post"]`),
	}
	operator.do("grant", []string{"The entitlement was granted.", "platform", "pi_3Kx9"}, grantPlatform...)

	// The owner's company ships nothing by hand: the release pipeline
	// pushes an image to the registry and the operator publishes it.
	digest := pushRandomImage(t, "platform", "1.0.0")
	operator.do("publish", []string{"The release was published.", "1.0.0"},
		chromedp.Navigate(base+"/operator/releases"),
		chromedp.SetValue(chromedp.CSS(`#rel-product`), "platform"),
		chromedp.SendKeys(chromedp.CSS(`#version`), "1.0.0"),
		submit(`form[action="/operator/releases"]`))

	owner.do("downloads", []string{"Get a download capability"}, chromedp.Navigate(base+"/app/accounts/"+team+"/downloads"))
	owner.do("download", []string{"Capability for platform", "Use it once, before"},
		chromedp.SetValue(chromedp.CSS(`#artifact`), "platform"),
		chromedp.SendKeys(chromedp.CSS(`#version_range`), "^1.0.0"),
		submit(`form[action$="/downloads"]`))
	if token := owner.value(`#capability`); len(token) < 20 {
		t.Errorf("capability token %q is not shown", token)
	}
	host := strings.TrimPrefix(base, "http://")
	owner.do("registry-login", []string{"Registry login for platform", host, "Password (shown only now)"},
		submit(`form[action$="/downloads/exchange"]`))
	if got, want := owner.text(`#cmd-pull`), "docker pull "+host+"/platform:1.0.0"; got != want {
		t.Errorf("the pull command is %q, want %q", got, want)
	}
	user, password := owner.text(`#username`), owner.value(`#registry-password`)
	if got := pullThroughGateway(t, host+"/platform:1.0.0", user, password); got != digest {
		t.Errorf("pulled %s through the gateway, want the pushed %s", got, digest)
	}
	owner.do("pulls", []string{"platform:1.0.0", digest, user}, chromedp.Navigate(base+"/app/accounts/"+team+"/pulls"))

	// The reconciliation: a second payment for a product the account
	// holds is a 409 explained, and the operator revokes and re-grants.
	operator.do("duplicate", []string{"An active row exists: leave it, or revoke and re-grant."},
		append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(base + "/operator/grant?account_id=" + team)}, grantPlatform...)...)
	operator.do("revoke-confirm", []string{"Revoke entitlement #", "platform", "pi_3Kx9"},
		chromedp.Click(chromedp.CSS(`.highlight a[href*="/revoke"]`)))
	operator.do("revoked", []string{"The entitlement was revoked.", "revoked"},
		submit(`form[action$="/revoke"]`))
	operator.do("regrant", []string{"The entitlement was granted."},
		append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(base + "/operator/grant?account_id=" + team)}, grantPlatform...)...)
	operator.do("list", []string{"revoked", "active"},
		chromedp.Navigate(base+"/operator/entitlements?account_id="+team+"&product=platform"))
	// The account's page, from the list's link and from the console's
	// lookup: who is in it and what it holds.
	accountPage := []string{"Acme Rockets", "Team account", "owner@example.com", "member@example.com", "pi_3Kx9", "revoked", "active",
		"platform:1.0.0", digest, user}
	operator.do("account-page", accountPage, chromedp.Click(chromedp.CSS(`td a[href="/operator/accounts/`+team+`"]`)))
	operator.do("account-lookup", accountPage,
		chromedp.Navigate(base+"/operator"),
		chromedp.SendKeys(chromedp.CSS(`#account-id`), team),
		submit(`form[action="/operator/accounts"]`))

	// The audit trail: the revoke and both grants, and the operator made
	// staff; at a phone's width too.
	operator.do("audit", []string{"Revoked platform", "Granted platform", "Acme Rockets", "Made staff", "operator@example.com"},
		chromedp.Navigate(base+"/operator/audit"))
	operator.do("phone-audit", []string{"Audit trail"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile), chromedp.Navigate(base+"/operator/audit"))
	operator.fitsWidth("phone-audit")
	operator.do("desktop-audit", []string{"Audit trail"}, chromedp.EmulateViewport(1280, 900), chromedp.Reload())

	// Dark, then at a phone's width: axe checks the contrast of each.
	owner.do("dark", []string{"Get a download capability"},
		colorScheme("dark"), chromedp.Navigate(base+"/app/accounts/"+team+"/downloads"))
	owner.do("dark-members", []string{"Members"}, chromedp.Navigate(base+"/app/accounts/"+team))
	owner.do("phone", []string{"Members", "member@example.com"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/app/accounts/"+team))
	owner.fitsWidth("phone")
	// At a phone's width the header is one row with a Menu, and the
	// account's tabs one scrollable row.
	phone, err := chromedp.Run(owner.ctx, chromedp.Evaluate[map[string]bool](`({
		menu: getComputedStyle(document.querySelector("header .menu")).display !== "none",
		inline: getComputedStyle(document.querySelector("header .nav-links")).display === "none",
		header: document.querySelector("header nav").getBoundingClientRect().height < 70,
		tabs: document.querySelector("nav.tabs").getBoundingClientRect().height < 60})`))
	if err != nil {
		t.Fatal(err)
	}
	for what, ok := range phone {
		if !ok {
			t.Errorf("at 390 px the %s check fails: %v", what, phone)
		}
	}
	owner.do("phone-menu", []string{"Members"}, chromedp.Click(chromedp.CSS(`header .menu summary`)))
	owner.do("phone-pulls", []string{"platform:1.0.0"}, chromedp.Navigate(base+"/app/accounts/"+team+"/pulls"))
	owner.fitsWidth("phone-pulls")
	owner.do("phone-light", []string{"Entitlements"}, colorScheme("light"),
		chromedp.Navigate(base+"/app/accounts/"+team+"/entitlements"))
	owner.fitsWidth("phone-light")
	owner.do("desktop", []string{"Your accounts"}, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/app"))

	owner.do("security", []string{"signing in asks only for your password", "Set up two-factor authentication"},
		chromedp.Navigate(base+"/app/security"))
	owner.do("settings", []string{"Change your password", "Where you are signed in", "This browser"},
		chromedp.Navigate(base+"/app/settings"))
	member.do("member-tabs", []string{"Members"}, chromedp.Navigate(base+"/app/accounts/"+team))
	if n, _ := chromedp.Run(member.ctx, chromedp.Evaluate[int](`document.querySelectorAll('nav.tabs a[href$="/webhooks"], nav.tabs a[href$="/api_keys"]').length`)); n != 0 {
		t.Errorf("a member sees %d tabs they cannot use", n)
	}
	operator.do("console-slash", []string{"Operator console"}, chromedp.Navigate(base+"/operator/"))
	owner.do("releases", []string{"Releases"}, chromedp.Navigate(base+"/app/accounts/"+team+"/releases"))
	owner.do("activity", []string{"Activity"}, chromedp.Navigate(base+"/app/accounts/"+team+"/activity"))
	operator.do("releases-console", []string{"Publish a release"}, chromedp.Navigate(base+"/operator/releases"))
	// The team lists a project in the public directory; it is found by
	// search and starred.
	owner.do("projects-tab", []string{"This account has published no project yet.", "Publish a project"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/projects"))
	owner.do("project-published", []string{"The project was published.", "Rocket CLI"},
		chromedp.SendKeys(chromedp.CSS(`#name`), "Rocket CLI"),
		chromedp.SendKeys(chromedp.CSS(`#summary`), "Launch rockets from the shell"),
		chromedp.SendKeys(chromedp.CSS(`#description`), "# Rocket CLI\n\nCounts down, *then* launches."),
		chromedp.SendKeys(chromedp.CSS(`#tags`), "cli, rockets"),
		chromedp.Click(chromedp.CSS(`#uses-platform`)),
		submit(`form[action="/app/accounts/`+team+`/projects"]`))
	owner.do("projects-directory", []string{"Rocket CLI", "Launch rockets from the shell", "rockets (1)"},
		chromedp.Navigate(base+"/projects"))
	owner.do("projects-search", []string{"Projects matching rockets", "Rocket CLI"},
		chromedp.SendKeys(chromedp.CSS(`#q`), "rockets"), submit(`form[role="search"]`))
	owner.do("project-page", []string{"Counts down, then launches.", "Built with", "Star Rocket CLI"},
		chromedp.Click(chromedp.CSS(`ul.projects h2 a`)))
	owner.do("project-starred", []string{"You starred this project.", "Unstar Rocket CLI"}, submit(`form[action$="/star"]`))
	journeyLicensing(t, owner, member, operator, base, team)
	journeyDarkroom(t, owner, member, operator, base, team)
	journeyBilling(t, owner, member, operator, base, team)
	journeyMuse(t, owner, member, operator, base, team)
	journeyPush(t, owner, member, operator, base, team)
	owner.do("signout", []string{"Your software, licensed and delivered"}, submit(`form[action="/signout"]`))
	owner.do("signed-out", []string{"Sign in"}, chromedp.Navigate(base+"/app"))
}

// mailboxLink waits for a mail to address in the quick start's local
// mailbox carrying a link to path, and returns it.
func mailboxLink(t *testing.T, address, path string) string {
	t.Helper()
	re := regexp.MustCompile(`https?://[^\s"<>]+` + regexp.QuoteMeta(path) + `\?token=[A-Za-z0-9_%-]+`)
	return mailboxWait(t, 30*time.Second, "a "+path+" mail to "+address, address, re.FindString)
}

// mailboxWait polls the quick start's local mailbox (courier on :8083)
// for up to timeout until pick finds what it wants ("" for nothing) in
// the text of a mail to address, and returns that.
func mailboxWait(t *testing.T, timeout time.Duration, what, address string, pick func(text string) string) string {
	t.Helper()
	var found string
	testutil.Eventually(t, timeout, what+" in the local mailbox", func() bool {
		res, err := http.Get("http://localhost:8083/dev/mail.json")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var box struct {
			Messages []struct{ To, Text string }
		}
		if json.NewDecoder(res.Body).Decode(&box) != nil {
			return false
		}
		for _, m := range box.Messages {
			if strings.Contains(m.To, address) {
				if found = pick(m.Text); found != "" {
					return true
				}
			}
		}
		return false
	})
	return found
}

// value reads a form field, which only the journey needs.
func (b *browser) value(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("%s: read %s: %v", b.name, sel, err)
	}
	return v
}
