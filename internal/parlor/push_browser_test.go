package parlor_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/platformco/platform/internal/parlor"
)

// TestSettingsSubscribesThisBrowserToPush: on Settings, Chromium
// registers the service worker at /sw.js and subscribes; the subscription
// reaches courier (through parlor and the gateway) and the page lists the
// browser as a device (subscribeThisBrowserToPush). The browser journey
// walks the same steps (journeyPush) against platform dev.
func TestSettingsSubscribesThisBrowserToPush(t *testing.T) {
	exe := findBrowser(t)
	st := startStack(t)
	api := parlor.NewClient(st.GatewayURL, 5*time.Second)
	email := uniqueEmail("push")
	if err := api.Register(context.Background(), email, oauthPassword); err != nil {
		t.Fatal(err)
	}
	axeScript, err := os.ReadFile(filepath.Join("testdata", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	step := 0
	b := newBrowser(t, exe, "customer", st.GatewayURL, t.ArtifactDir(), string(axeScript), &step)
	b.do("signin", []string{"Sign in"}, chromedp.Navigate(st.GatewayURL+"/signin"))
	b.do("signed-in", []string{"Your accounts"},
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.SendKeys(chromedp.CSS(`#password`), oauthPassword),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	subscribeThisBrowserToPush(t, b, st.GatewayURL, email, oauthPassword)
}

// subscribeThisBrowserToPush walks Settings' devices section in b, whose
// user (email, password) has no device yet: the service worker at /sw.js
// is registered over the whole site, the browser subscribes, courier
// (asked through the gateway at base) holds the subscription named by
// the browser, the page lists the browser as a device, and removing it
// empties the list again.
//
// Headless Chromium has no push service to subscribe with
// (pushManager.subscribe fails without one), so when it fails the page's
// own submit path is handed a subscription made as a browser makes one (a
// P-256 key pair and a 16-byte auth secret), and the test's log says so.
func subscribeThisBrowserToPush(t *testing.T, b *browser, base, email, password string) {
	t.Helper()
	b.do("push-settings", []string{"Devices", "No browser shows your notifications yet."},
		chromedp.Navigate(base+"/app/settings"))

	rctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	scope, err := chromedp.Run(rctx, chromedp.Evaluate[string](`window.parlorPush.ready.then(r => r.active ? r.scope : "not active")`, chromedp.EvalAwaitPromise))
	if err != nil || scope != base+"/" {
		t.Fatalf("service worker registration: scope %q, %v; want %s/", scope, err, base)
	}
	script, err := chromedp.Run(rctx, chromedp.Evaluate[string](`navigator.serviceWorker.controller ? "controlled" : (navigator.serviceWorker.ready.then(r => r.active.scriptURL))`, chromedp.EvalAwaitPromise))
	if err != nil || (script != "controlled" && script != base+"/sw.js") {
		t.Errorf("the service worker's script = %q, %v; want /sw.js", script, err)
	}

	// Ask for a real subscription, as the button does, with notifications
	// allowed for the site.
	for _, name := range []string{"notifications", "push"} {
		err := chromedp.Do(rctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name, UserVisibleOnly: true},
				Setting:    cdpbrowser.PermissionSettingGranted, Origin: base})
			return err
		}))
		if err != nil {
			t.Logf("granting %s: %v", name, err)
		}
	}
	// Headless Chromium may never answer a subscription it cannot make:
	// 15 seconds without one count as a refusal.
	const subscribe = `Promise.race([window.parlorPush.ready.then(r => r.pushManager.subscribe({userVisibleOnly: true,
		applicationServerKey: document.getElementById("push-form").getAttribute("data-vapid-key")}))
		.then(s => "ok", e => "error: " + e.name + ": " + e.message),
		new Promise(resolve => setTimeout(() => resolve("error: no answer within 15 seconds"), 15000))])`
	sctx, scancel := context.WithTimeout(b.ctx, time.Minute)
	defer scancel()
	outcome, err := chromedp.Run(sctx, chromedp.Evaluate[string](subscribe, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	var endpoint string
	if outcome == "ok" {
		b.do("push-subscribed", []string{"This browser will show your notifications.", "HeadlessChrome"},
			chromedp.Click(chromedp.CSS(`#push-form button`)))
	} else {
		t.Logf("headless Chromium did not subscribe (%s): the page's submit path is given a browser-made subscription", outcome)
		k, err := ecdh.P256().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		secret := make([]byte, 16)
		_, _ = rand.Read(secret)
		// Courier runs in development here: a loopback push service is
		// admitted (never outside development).
		endpoint = "https://127.0.0.1:9/wpush/" + randomHex()
		sub, _ := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{
			"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(secret)}})
		b.do("push-subscribed", []string{"This browser will show your notifications.", "HeadlessChrome"},
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.parlorPush.submit(%s)`, sub)))
	}

	// Courier has the subscription, named by the browser.
	api := parlor.NewClient(base, 5*time.Second)
	sess, err := api.SignIn(context.Background(), email, password)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := api.PushSubscriptions(context.Background(), sess.Token)
	if err != nil || len(subs) != 1 {
		t.Fatalf("courier lists %d subscriptions (%v), want 1", len(subs), err)
	}
	if !strings.Contains(subs[0].Device, "HeadlessChrome") || (endpoint != "" && subs[0].Endpoint != endpoint) {
		t.Errorf("subscription = %+v, want the browser's", subs[0])
	}

	b.do("push-device-removed", []string{"That device no longer gets notifications.", "No browser shows your notifications yet."},
		chromedp.Click(chromedp.CSS(`ul.devices form button`)))
}
