package parlor_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestVerifyFromTheMailbox(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("ada")
	v := newVisitor(t, base)
	v.signUp(email)
	v.get("/app").expect(t, http.StatusOK, "Please verify your email address")
	v.get("/app/settings").expect(t, http.StatusOK, "not verified yet", "Send a new verification link")
	// Registration just sent one: a second within the minute is refused in words.
	v.post("/app/settings/verification", nil).expect(t, http.StatusTooManyRequests, "less than a minute ago")

	// Opening the link (a mail scanner's prefetch, twice) spends
	// nothing: only the page's button does.
	link := st.linkIn(t, email, "/verify")
	token := linkTokenOf(t, link)
	for range 2 {
		page := newVisitor(t, base).get(link).expect(t, http.StatusOK, "Verify my address")
		if !strings.Contains(page.Body, `<form method="post" action="/verify">`) {
			t.Fatalf("the link's page has no form posting to /verify:\n%s", page.Body)
		}
	}
	v.get("/app").expect(t, http.StatusOK, "Please verify your email address")
	v.post("/verify", url.Values{"token": {token}}).expect(t, http.StatusOK, "Your email address is verified")
	if page := v.get("/app").expect(t, http.StatusOK, "Your accounts"); strings.Contains(page.Body, "Please verify your email address") {
		t.Error("the verify notice is still shown after verifying")
	}
	v.get("/app/settings").expect(t, http.StatusOK, "(verified)")

	tests := []struct {
		name   string
		method string
		path   string
		form   url.Values
		status int
		words  string
	}{
		{"UsedLinkIsGone", "POST", "/verify", url.Values{"token": {token}}, http.StatusGone, "already been used"},
		{"UnknownLinkIsNotValid", "POST", "/verify", url.Values{"token": {"no-such-token"}}, http.StatusNotFound, "is not valid"},
		{"PostWithoutTokenIsRefused", "POST", "/verify", url.Values{}, http.StatusBadRequest, "has no token"},
		{"LinkWithoutTokenIsRefused", "GET", "/verify", nil, http.StatusBadRequest, "has no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.method == "GET" {
				newVisitor(t, base).get(tt.path).expect(t, tt.status, tt.words)
				return
			}
			newVisitor(t, base).post(tt.path, tt.form).expect(t, tt.status, tt.words)
		})
	}
}

func TestPasswordResetPages(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	email := uniqueEmail("ada")
	v := newVisitor(t, base)
	v.signUp(email)

	anon := newVisitor(t, base)
	anon.get("/reset").expect(t, http.StatusOK, "Reset your password", "Send the link")
	anon.post("/reset", url.Values{"email": {"nope"}}).expect(t, http.StatusUnprocessableEntity, "Enter a valid email address")
	// A registered and an unknown address get the same answer.
	for _, address := range []string{uniqueEmail("nobody"), email} {
		a := anon.post("/reset", url.Values{"email": {address}})
		if a.Status != http.StatusSeeOther || a.location() != "/reset?done=sent" {
			t.Fatalf("reset for %s: %d to %q, want 303 to /reset?done=sent", address, a.Status, a.location())
		}
	}
	anon.get("/reset?done=sent").expect(t, http.StatusOK, "If an account uses that address")

	link := st.linkIn(t, email, "/reset")
	token, err := url.ParseQuery(strings.TrimPrefix(link, "/reset?"))
	if err != nil {
		t.Fatal(err)
	}
	anon.get(link).expect(t, http.StatusOK, "Choose a new password")
	anon.post("/reset", url.Values{"token": token["token"], "password": {"short"}}).
		expect(t, http.StatusUnprocessableEntity, "at least 8 characters")
	a := anon.post("/reset", url.Values{"token": token["token"], "password": {"another horse battery"}})
	if a.Status != http.StatusSeeOther || a.location() != "/signin?done=reset" {
		t.Fatalf("confirm: %d to %q", a.Status, a.location())
	}
	anon.get("/signin?done=reset").expect(t, http.StatusOK, "every session has ended")
	anon.post("/reset", url.Values{"token": token["token"], "password": {"another horse battery"}}).
		expect(t, http.StatusGone, "already been used")

	// The reset ended the earlier session; the new password signs in.
	if a := v.get("/app"); a.Status != http.StatusSeeOther {
		t.Errorf("the old session still opens /app: %d", a.Status)
	}
	in := newVisitor(t, base)
	if a := in.post("/signin", url.Values{"email": {email}, "password": {"another horse battery"}}); a.Status != http.StatusSeeOther {
		t.Errorf("sign in with the new password: %d\n%s", a.Status, visibleText(a.Body))
	}
}

func TestEmailChangePages(t *testing.T) {
	st := startStack(t)
	base := startParlor(t, st.GatewayURL)
	old, next := uniqueEmail("old"), uniqueEmail("new")
	v := newVisitor(t, base)
	v.signUp(old)
	v.get("/app/settings").expect(t, http.StatusOK, "Change your email address")
	v.post("/app/settings/email", url.Values{"email": {next}, "password": {"wrong password"}}).
		expect(t, http.StatusForbidden, "The password is wrong.")
	v.post("/app/settings/email", url.Values{"email": {"nope"}, "password": {"correct horse battery"}}).
		expect(t, http.StatusUnprocessableEntity, "Enter a valid email address")
	a := v.post("/app/settings/email", url.Values{"email": {next}, "password": {"correct horse battery"}})
	if a.Status != http.StatusSeeOther || a.location() != "/app/settings?done=email" {
		t.Fatalf("change: %d to %q", a.Status, a.location())
	}
	v.get("/app/settings?done=email").expect(t, http.StatusOK, "we have sent it a confirmation link")

	// Opening the link twice spends nothing; the page's button does.
	link := st.linkIn(t, next, "/email/confirm")
	token := url.Values{"token": {linkTokenOf(t, link)}}
	for range 2 {
		newVisitor(t, base).get(link).expect(t, http.StatusOK, "Change my address")
	}
	v.get("/app/settings").expect(t, http.StatusOK, old)
	v.post("/email/confirm", token).expect(t, http.StatusOK, "Your email address has changed")
	newVisitor(t, base).post("/email/confirm", token).expect(t, http.StatusGone, "already been used")
	newVisitor(t, base).get("/email/confirm").expect(t, http.StatusBadRequest, "has no token")
	in := newVisitor(t, base)
	if a := in.post("/signin", url.Values{"email": {next}, "password": {"correct horse battery"}}); a.Status != http.StatusSeeOther {
		t.Fatalf("sign in at the new address: %d\n%s", a.Status, visibleText(a.Body))
	}
	in.get("/app/settings").expect(t, http.StatusOK, next, "(verified)")
}
