package parlor_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/testutil"
)

// The web app as a new user finds it (issue 53): each flow's fix is
// asserted here against the real platform.

var lockedUntil = regexp.MustCompile(`locked until (\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC`)

func TestLockoutSaysUntilWhenAndOffersTheReset(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("locked")
	newVisitor(t, base).signUp(email)

	v := newVisitor(t, base)
	var a answer
	for range 10 {
		a = v.post("/signin", url.Values{"email": {email}, "password": {"wrong horse battery"}})
		if a.Status == http.StatusLocked {
			break
		}
		a.expect(t, http.StatusUnauthorized, "The email address or the password is wrong.")
	}
	a.expect(t, http.StatusLocked, "Resetting the password unlocks it now.", "Reset your password to unlock")
	if !lockedUntil.MatchString(visibleText(a.Body)) {
		t.Errorf("the lockout does not say until when:\n%s", visibleText(a.Body))
	}
	if !strings.Contains(a.Body, `href="/reset"`) {
		t.Errorf("the lockout offers no reset link")
	}
}

func TestPendingInvitationsResendAndRevoke(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	owner := newVisitor(t, base)
	owner.signUp(uniqueEmail("owner"))
	team := accountIDFrom(t, owner.post("/app/accounts", url.Values{"name": {"Crew " + uniqueEmail("c")[2:10]}}).location())
	invitee := uniqueEmail("invitee")
	a := owner.post("/app/accounts/"+team+"/invitations", url.Values{"email": {invitee}, "role": {"admin"}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("invite: %d, want 303\n%s", a.Status, visibleText(a.Body))
	}
	first := st.linkIn(t, invitee, "/invitations/accept")
	page := owner.get("/app/accounts/"+team).expect(t, http.StatusOK, "Pending invitations", invitee, "admin")
	inv := regexp.MustCompile(`/invitations/([0-9a-f-]{36})/resend`).FindStringSubmatch(page.Body)
	if inv == nil {
		t.Fatalf("the pending invitation offers no resend:\n%s", visibleText(page.Body))
	}

	a = owner.post("/app/accounts/"+team+"/invitations/"+inv[1]+"/resend", nil)
	if a.Status != http.StatusSeeOther {
		t.Fatalf("resend: %d\n%s", a.Status, visibleText(a.Body))
	}
	owner.get(a.location()).expect(t, http.StatusOK, "The invitation was emailed again with a new link")
	var second string
	testutilEventually(t, func() bool { second = st.linkIn(t, invitee, "/invitations/accept"); return second != first })

	a = owner.post("/app/accounts/"+team+"/invitations/"+inv[1]+"/revoke", nil)
	if a.Status != http.StatusSeeOther {
		t.Fatalf("revoke: %d\n%s", a.Status, visibleText(a.Body))
	}
	owner.get(a.location()).expect(t, http.StatusOK, "The invitation was revoked", "No invitation is waiting to be accepted.")
	owner.post("/app/accounts/"+team+"/invitations/"+inv[1]+"/revoke", nil).
		expect(t, http.StatusNotFound, "That invitation is no longer open")
}

func TestMembersPageOffersOnlyWhatTheRoleMayDo(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	owner, member, team, _ := teamWithMember(t, st, base)
	ownerID := memberID(t, owner, team, "(you)")

	page := owner.get("/app/accounts/"+team).expect(t, http.StatusOK, "The only owner: make another member an owner first.")
	for _, own := range []string{"/members/" + ownerID + "/remove", "/members/" + ownerID + "/role"} {
		if strings.Contains(page.Body, own) {
			t.Errorf("the sole owner is offered %s on their own row", own)
		}
	}
	if !strings.Contains(page.Body, `/webhooks"`) || !strings.Contains(page.Body, `/api_keys"`) {
		t.Errorf("the owner does not see the Webhooks and API keys tabs")
	}
	// A member sees no tab that ends in "Not permitted".
	mpage := member.get("/app/accounts/"+team).expect(t, http.StatusOK, "Members")
	for _, tab := range []string{`/webhooks"`, `/api_keys"`, "Pending invitations"} {
		if strings.Contains(mpage.Body, tab) {
			t.Errorf("a member is offered %s", tab)
		}
	}
}

func TestSmallPageDetails(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)

	t.Run("Favicon", func(t *testing.T) {
		a := v.get("/favicon.ico")
		if a.Status != http.StatusOK || a.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(a.Body, "<svg") {
			t.Errorf("/favicon.ico = %d %q, want the SVG icon", a.Status, a.Header.Get("Content-Type"))
		}
		if !strings.Contains(v.get("/signin").Body, `rel="icon"`) {
			t.Errorf("the pages link no icon")
		}
	})
	v.signUp(uniqueEmail("details"))
	t.Run("VerifyBannerIsAWarning", func(t *testing.T) {
		page := v.get("/app").expect(t, http.StatusOK, "Please verify your email address")
		if !strings.Contains(page.Body, `<p class="notice warn" role="status">Please verify`) {
			t.Errorf("the verify banner is not styled as a warning")
		}
	})
	t.Run("PhoneMenuAndScrollableTabs", func(t *testing.T) {
		page := v.get("/app/accounts/"+personalAccount(t, v)).expect(t, http.StatusOK, "Members")
		if !strings.Contains(page.Body, `<details class="menu"><summary>Menu</summary>`) {
			t.Errorf("the header has no menu for a narrow screen")
		}
		css := v.get("/static/style.css").Body
		for _, rule := range []string{".tabs { display: flex; flex-wrap: nowrap; overflow-x: auto;", "code.digest { white-space: nowrap; }"} {
			if !strings.Contains(css, rule) {
				t.Errorf("the stylesheet lacks %q", rule)
			}
		}
	})
	t.Run("ScopesAreLabelledAndDescribed", func(t *testing.T) {
		acct := personalAccount(t, v)
		page := v.get("/app/accounts/"+acct+"/api_keys").expect(t, http.StatusOK,
			"Get download capabilities for the products it holds")
		if !strings.Contains(page.Body, `<input type="checkbox" id="scope-artifacts:fetch" name="scopes" value="artifacts:fetch" aria-describedby="scope-artifacts:fetch-hint">`) ||
			!strings.Contains(page.Body, `<label for="scope-artifacts:fetch">`) {
			t.Errorf("the scope checkboxes are not tied to their labels and descriptions")
		}
		v.post("/app/accounts/"+acct+"/api_keys", url.Values{"name": {"ci"}, "scopes": {"artifacts:fetch"}}).
			expect(t, http.StatusOK, "Your new API key")
		if page := v.get("/app/accounts/" + acct + "/api_keys"); !strings.Contains(page.Body, `<th scope="col">Revoke</th>`) {
			t.Errorf("the Revoke column has no header")
		}
	})
	t.Run("OperatorTrailingSlash", func(t *testing.T) {
		staff := uniqueEmail("staff")
		op := newVisitor(t, base)
		op.signUp(staff)
		st.makeStaff(t, staff)
		if a := op.get("/operator/"); a.Status != http.StatusMovedPermanently || a.location() != "/operator" {
			t.Errorf("/operator/ = %d to %q, want 301 to /operator", a.Status, a.location())
		}
		v.get("/operator/").expect(t, http.StatusNotFound)
	})
}

// testutilEventually waits up to 15 s for cond.
func testutilEventually(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, "the condition", cond)
}

func TestSettingsPasswordAndSessions(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("settings")
	here := newVisitor(t, base)
	here.signUp(email)
	there := newVisitor(t, base)
	there.post("/signin", url.Values{"email": {email}, "password": {"correct horse battery"}})

	page := here.get("/app/settings").expect(t, http.StatusOK, "Change your password", "Where you are signed in",
		"This browser", "Another browser or device", "Sign out every other session", "Sign out everywhere")
	_ = page

	t.Run("ErrWrongCurrentPassword", func(t *testing.T) {
		here.post("/app/settings/password", url.Values{"current_password": {"not it at all"}, "new_password": {"a brand new horse"}}).
			expect(t, http.StatusForbidden, "The current password is wrong.")
		here.post("/app/settings/password", url.Values{"current_password": {"correct horse battery"}, "new_password": {"short"}}).
			expect(t, http.StatusUnprocessableEntity, "The new password must be at least 8 characters long.")
	})
	t.Run("ChangePasswordEndsTheOthers", func(t *testing.T) {
		a := here.post("/app/settings/password", url.Values{"current_password": {"correct horse battery"}, "new_password": {"a brand new horse"}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("change password: %d\n%s", a.Status, visibleText(a.Body))
		}
		here.get(a.location()).expect(t, http.StatusOK, "Your password was changed.")
		if a := there.get("/app"); a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/signin") {
			t.Errorf("the other session still works after the change: %d", a.Status)
		}
	})
	t.Run("SignOutOneSession", func(t *testing.T) {
		there.post("/signin", url.Values{"email": {email}, "password": {"a brand new horse"}})
		page := here.get("/app/settings").expect(t, http.StatusOK, "Another browser or device")
		m := regexp.MustCompile(`action="/app/settings/sessions/([0-9a-f-]{36})/end"`).FindStringSubmatch(page.Body)
		if m == nil {
			t.Fatalf("no sign-out for the other session:\n%s", visibleText(page.Body))
		}
		// Another user cannot end it.
		stranger := newVisitor(t, base)
		stranger.signUp(uniqueEmail("stranger"))
		stranger.post("/app/settings/sessions/"+m[1]+"/end", nil).expect(t, http.StatusNotFound)
		a := here.post("/app/settings/sessions/"+m[1]+"/end", nil)
		if a.Status != http.StatusSeeOther {
			t.Fatalf("sign out one session: %d\n%s", a.Status, visibleText(a.Body))
		}
		if page := here.get(a.location()).expect(t, http.StatusOK, "That session has ended"); strings.Contains(page.Body, "Another browser or device") {
			t.Errorf("the ended session is still listed")
		}
		if a := there.get("/app"); a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/signin") {
			t.Errorf("the ended session still works: %d", a.Status)
		}
		here.get("/app").expect(t, http.StatusOK)
	})
	t.Run("SignOutOthersThenEverywhere", func(t *testing.T) {
		there.post("/signin", url.Values{"email": {email}, "password": {"a brand new horse"}})
		a := here.post("/app/settings/sessions/others", nil)
		if a.Status != http.StatusSeeOther {
			t.Fatalf("sign out others: %d\n%s", a.Status, visibleText(a.Body))
		}
		page := here.get(a.location()).expect(t, http.StatusOK, "Every other session of your account has ended")
		if strings.Contains(page.Body, "Another browser or device") {
			t.Errorf("another session is still listed")
		}
		if a := there.get("/app"); a.Status != http.StatusSeeOther {
			t.Errorf("the other session still works: %d", a.Status)
		}
		a = here.post("/app/settings/sessions/everywhere", nil)
		if a.Status != http.StatusSeeOther || a.location() != "/signin?done=everywhere" || here.cookie != "" {
			t.Fatalf("sign out everywhere: %d to %q", a.Status, a.location())
		}
		here.get(a.location()).expect(t, http.StatusOK, "You are signed out everywhere")
	})
}

func TestVerificationLeadsBackToTheInvitation(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	owner := newVisitor(t, base)
	owner.signUp(uniqueEmail("owner"))
	team := accountIDFrom(t, owner.post("/app/accounts", url.Values{"name": {"Way " + uniqueEmail("w")[2:10]}}).location())
	invitee := uniqueEmail("invitee")
	owner.post("/app/accounts/"+team+"/invitations", url.Values{"email": {invitee}, "role": {"member"}})
	link := st.linkIn(t, invitee, "/invitations/accept")

	v := newVisitor(t, base)
	v.get(link).expect(t, http.StatusOK, "To accept, sign in")
	v.signUp(invitee)
	v.get(link).expect(t, http.StatusOK, "Only a verified address accepts an invitation")
	v.post("/invitations/accept", url.Values{"token": {linkTokenOf(t, link)}}).
		expect(t, http.StatusForbidden, "Verify your email address first")
	verifyLink := st.linkIn(t, invitee, "/verify")
	v.get(verifyLink).expect(t, http.StatusOK, "Verify my address")
	page := v.post("/verify", url.Values{"token": {linkTokenOf(t, verifyLink)}}).
		expect(t, http.StatusOK, "Your email address is verified", "Back to your invitation")
	back := regexp.MustCompile(`href="([^"]+)" id="continue"`).FindStringSubmatch(page.Body)
	if back == nil || html.UnescapeString(back[1]) != link {
		t.Fatalf("the way back is %v, want %s", back, link)
	}
	a := v.post("/invitations/accept", url.Values{"token": {linkTokenOf(t, link)}})
	if a.Status != http.StatusSeeOther || accountIDFrom(t, a.location()) != team {
		t.Fatalf("accept after verifying: %d to %q", a.Status, a.location())
	}
}
