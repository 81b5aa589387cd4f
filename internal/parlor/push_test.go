package parlor_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// browserKeys is a subscription's keys as a browser makes them: an
// uncompressed P-256 public key and a 16-byte auth secret, both base64url.
func browserKeys(t *testing.T) (p256dh, auth string) {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	return base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(secret)
}

// TestPushFormsOnSettings: Settings' devices section through parlor's
// forms, without a browser: what the page says for a form without a
// subscription and for one courier refuses, a device listed after a good
// subscription (named by the User-Agent) and gone after removal.
func TestPushFormsOnSettings(t *testing.T) {
	st := startStack(t)
	v := newVisitor(t, st.GatewayURL)
	v.signUp(uniqueEmail("pushform"))
	v.get("/app/settings").expect(t, http.StatusOK, "Devices", "No browser shows your notifications yet.")

	p256dh, auth := browserKeys(t)
	refused := []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"no subscription", url.Values{}, http.StatusUnprocessableEntity, "Your browser sent no subscription"},
		{"keys missing", url.Values{"endpoint": {"https://127.0.0.1:9/wpush/a"}}, http.StatusUnprocessableEntity, "Your browser sent no subscription"},
		{"plain http push service", url.Values{"endpoint": {"http://push.example.com/wpush/a"}, "p256dh": {p256dh}, "auth": {auth}},
			http.StatusUnprocessableEntity, "Your browser's subscription was refused"},
		{"auth secret not 16 bytes", url.Values{"endpoint": {"https://127.0.0.1:9/wpush/a"}, "p256dh": {p256dh}, "auth": {"c2hvcnQ"}},
			http.StatusUnprocessableEntity, "Your browser's subscription was refused"},
		{"key not a P-256 point", url.Values{"endpoint": {"https://127.0.0.1:9/wpush/a"}, "p256dh": {auth}, "auth": {auth}},
			http.StatusUnprocessableEntity, "Your browser's subscription was refused"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			v.post("/app/settings/push", tc.form).expect(t, tc.status, tc.says, "Devices")
		})
	}
	v.get("/app/settings").expect(t, http.StatusOK, "No browser shows your notifications yet.")

	// Courier runs in development in the stack: a loopback push service is
	// admitted there (never outside development).
	req, err := http.NewRequest("POST", st.GatewayURL+"/app/settings/push", strings.NewReader(url.Values{
		"endpoint": {"https://127.0.0.1:9/wpush/" + randomHex()}, "p256dh": {p256dh}, "auth": {auth}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", st.GatewayURL)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0")
	a := v.send(req)
	if a.Status != http.StatusSeeOther || a.location() != "/app/settings?done=push" {
		t.Fatalf("subscribe: %d to %q, want 303 to /app/settings?done=push\n%s", a.Status, a.location(), visibleText(a.Body))
	}
	page := v.get(a.location()).expect(t, http.StatusOK, "This browser will show your notifications.", "Firefox")
	m := regexp.MustCompile(`action="/app/settings/push/([^/"]+)/delete"`).FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no device to remove on the page:\n%s", visibleText(page.Body))
	}

	// Another user cannot remove it; its owner can.
	other := newVisitor(t, st.GatewayURL)
	other.signUp(uniqueEmail("pushother"))
	if a := other.post("/app/settings/push/"+m[1]+"/delete", url.Values{}); a.Status != http.StatusNotFound {
		t.Errorf("another user's removal: status %d, want 404", a.Status)
	}
	a = v.post("/app/settings/push/"+m[1]+"/delete", url.Values{})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("remove: status %d\n%s", a.Status, visibleText(a.Body))
	}
	v.get(a.location()).expect(t, http.StatusOK, "That device no longer gets notifications.", "No browser shows your notifications yet.")
}

// TestServiceWorkerServedAtTheRoot: /sw.js is served from the site's
// root (so its scope is the whole site), as JavaScript, revalidated on
// every load so a new worker reaches browsers, and shows notifications on
// push.
func TestServiceWorkerServedAtTheRoot(t *testing.T) {
	st := startStack(t)
	resp, err := http.Get(st.GatewayURL + "/sw.js")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-cache"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, want := range []string{`addEventListener("push"`, "showNotification", `addEventListener("notificationclick"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("sw.js has no %s", want)
		}
	}
}
