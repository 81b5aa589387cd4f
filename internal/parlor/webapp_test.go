package parlor_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
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
