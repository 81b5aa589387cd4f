package parlor_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/testutil"
)

// deliveryStack is the platform with courier and keyholder behind the
// gateway: keyholdertest's identity, box, registry and keyholder, plus
// courier (development mode, local mailbox) and a gateway routing all.
type deliveryStack struct {
	*keyholdertest.Platform
	GatewayURL  string
	GatewayHost string
	// MailboxURL is courier's local mailbox, where identity's mail lands.
	MailboxURL string
}

func startDeliveryStack(t *testing.T) *deliveryStack {
	t.Helper()
	gwLn, gwURL := listen(t)
	host := gwLn.Addr().String()
	// identity relays its mail (verification links) to this stack's courier.
	courierLn, courierURL := listen(t)
	secret := strings.Repeat("s", 40)
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{
		Env: map[string]string{"KEYHOLDER_PUBLIC_HOST": host},
		IdentityEnv: map[string]string{"IDENTITY_COURIER_URL": courierURL, "IDENTITY_COURIER_TOKEN": "identity:" + secret,
			"IDENTITY_PUBLIC_URL": gwURL},
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	dir := t.TempDir()
	courierDB := "sqlite:" + filepath.Join(dir, "courier.db")
	if err := couriercmd.Migrate(ctx, courierDB); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var (
		cCfg  couriercmd.Config
		gwCfg gatewaycmd.Config
	)
	if err := config.Load(ctx, envOf(map[string]string{
		"DATABASE_URL": courierDB, "COURIER_ENV": "development", "COURIER_MAIL_ADAPTER": "local",
		"COURIER_LOCAL_DIR": filepath.Join(dir, "mail"), "COURIER_MAIL_FROM": "Platform <no-reply@example.com>",
		"COURIER_SECRET_BOX_KEY": base64.StdEncoding.EncodeToString(key),
		"IDENTITY_ISSUER":        p.IdentityURL, "COURIER_IDENTITY_URL": p.IdentityURL,
		"COURIER_SERVICE_TOKENS": "identity:" + secret,
	}), &cCfg); err != nil {
		t.Fatal(err)
	}
	if err := config.Load(ctx, envOf(map[string]string{
		"IDENTITY_URL": p.IdentityURL, "IDENTITY_ISSUER": p.IdentityURL, "BOX_URL": p.BoxURL,
		"COURIER_URL": courierURL, "KEYHOLDER_URL": p.KeyholderURL, "GATEWAY_RATE_LIMIT": "100000",
	}), &gwCfg); err != nil {
		t.Fatal(err)
	}
	logger := keyholdertest.Logger()
	for _, serve := range []func() error{
		func() error { return couriercmd.Serve(ctx, cCfg, logger, courierLn) },
		func() error { return gatewaycmd.Serve(ctx, gwCfg, logger, gwLn) },
	} {
		wg.Go(func() {
			if err := serve(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("serve: %v", err)
			}
		})
	}
	testutil.Eventually(t, 20*time.Second, "the gateway and courier are ready", func() bool {
		for _, u := range []string{gwURL + "/readyz", courierURL + "/readyz"} {
			resp, err := http.Get(u)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return true
	})
	return &deliveryStack{Platform: p, GatewayURL: gwURL, GatewayHost: host, MailboxURL: courierURL + "/dev/mail.json"}
}

// grant gives account product through box as the operator.
func (st *deliveryStack) grant(t *testing.T, account, product, versionRange string) {
	t.Helper()
	body := map[string]any{"account_id": account, "product": product, "version_range": versionRange}
	if code, raw := st.Call("POST", st.BoxURL+"/v1/operator/entitlements", st.StaffToken, body, nil); code != http.StatusCreated {
		t.Fatalf("grant %s: %d %s", product, code, raw)
	}
}

func TestPreferences(t *testing.T) {
	st := startDeliveryStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)
	v.signUp(uniqueEmail("prefs"))

	page := v.get("/app/preferences").expect(t, http.StatusOK, "Notifications", "Product updates", "Security messages")
	if got := strings.Count(page.Body, " checked>"); got != 3 {
		t.Errorf("a new user has %d categories ticked, want all 3", got)
	}
	a := v.post("/app/preferences", url.Values{"account_activity": {"on"}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", a.Status, visibleText(a.Body))
	}
	page = v.get(a.location()).expect(t, http.StatusOK, "Your notification preferences were saved.")
	for _, tt := range []struct {
		id   string
		want bool
	}{{"product_updates", false}, {"release_announcements", false}, {"account_activity", true}} {
		got := regexp.MustCompile(`id="` + tt.id + `" name="` + tt.id + `" checked>`).MatchString(page.Body)
		if got != tt.want {
			t.Errorf("%s ticked = %t, want %t", tt.id, got, tt.want)
		}
	}
}

var (
	secretOnPage = regexp.MustCompile(`value="(whsec_[^"]+)"`)
	endpointLink = regexp.MustCompile(`/webhooks/([0-9a-f-]{36})/deliveries`)
)

func TestWebhookEndpoints(t *testing.T) {
	st := startDeliveryStack(t)
	base := startParlor(t, st.GatewayURL)
	owner, member, team, _ := teamWithMember(t, &stack{GatewayURL: st.GatewayURL, MailboxURL: st.MailboxURL}, base)
	hooks := "/app/accounts/" + team + "/webhooks"

	owner.get(hooks).expect(t, http.StatusOK, "No endpoint yet", "identity.member.joined")
	t.Run("ErrNoEventTicked", func(t *testing.T) {
		owner.post(hooks, url.Values{"url": {"https://example.com/h"}}).
			expect(t, http.StatusUnprocessableEntity, "Tick at least one event")
	})
	t.Run("ErrURLNotHTTPS", func(t *testing.T) {
		owner.post(hooks, url.Values{"url": {"http://example.com/h"}, "event_types": {"identity.member.joined"}}).
			expect(t, http.StatusUnprocessableEntity, "must start with https://")
	})
	t.Run("ErrUnknownEvent", func(t *testing.T) {
		owner.post(hooks, url.Values{"url": {"https://example.com/h"}, "event_types": {"box.nothing"}}).
			expect(t, http.StatusUnprocessableEntity, "Choose only events from the list.")
	})
	t.Run("ErrMemberCannotManage", func(t *testing.T) {
		member.get(hooks).expect(t, http.StatusOK, "Only an admin or an owner")
		member.post(hooks, url.Values{"url": {"https://example.com/h"}, "event_types": {"identity.member.joined"}}).
			expect(t, http.StatusForbidden, "Only an admin or an owner can manage webhooks.")
	})
	t.Run("ErrOutsiderSeesNothing", func(t *testing.T) {
		outsider := newVisitor(t, base)
		outsider.signUp(uniqueEmail("outsider"))
		outsider.get(hooks).expect(t, http.StatusNotFound, "nothing here")
		outsider.get("/app/accounts/"+team+"/pulls").expect(t, http.StatusNotFound)
	})

	created := owner.post(hooks, url.Values{"url": {"http://127.0.0.1:9/hook"}, "description": {"CI"},
		"event_types": {"identity.member.joined", "identity.member.removed"}}).
		expect(t, http.StatusCreated, "The endpoint was created.", "Signing secret for http://127.0.0.1:9/hook", "shown only now")
	m := secretOnPage.FindStringSubmatch(created.Body)
	if m == nil {
		t.Fatalf("no secret on the page:\n%s", visibleText(created.Body))
	}
	first := m[1]
	list := owner.get(hooks).expect(t, http.StatusOK, "http://127.0.0.1:9/hook", "identity.member.joined, identity.member.removed", "enabled")
	if strings.Contains(list.Body, first) {
		t.Errorf("the secret is shown again on the list")
	}
	em := endpointLink.FindStringSubmatch(list.Body)
	if em == nil {
		t.Fatalf("no delivery log link:\n%s", visibleText(list.Body))
	}
	eid := em[1]
	ep := hooks + "/" + eid

	t.Run("Rotate", func(t *testing.T) {
		page := owner.post(ep+"/rotate", nil).expect(t, http.StatusOK, "The signing secret was replaced")
		m := secretOnPage.FindStringSubmatch(page.Body)
		if m == nil || m[1] == first {
			t.Errorf("rotation shows no new secret")
		}
	})
	t.Run("DisableAndEnable", func(t *testing.T) {
		a := owner.post(ep+"/disable", nil)
		if a.Status != http.StatusSeeOther {
			t.Fatalf("disable: %d\n%s", a.Status, visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The endpoint was disabled", "disabled", "Enable")
		a = owner.post(ep+"/enable", nil)
		owner.get(a.location()).expect(t, http.StatusOK, "The endpoint was enabled.")
	})
	t.Run("DeliveryLog", func(t *testing.T) {
		owner.get(ep+"/deliveries").expect(t, http.StatusOK, "Delivery log of http://127.0.0.1:9/hook", "Nothing has been delivered")
		owner.get(hooks+"/00000000-0000-0000-0000-000000000000/deliveries").expect(t, http.StatusNotFound, "nothing here")
		owner.post(ep+"/deliveries/00000000-0000-0000-0000-000000000000/retry", nil).expect(t, http.StatusNotFound, "nothing here")
	})
	t.Run("ErrDeleteNeedsConfirmation", func(t *testing.T) {
		owner.post(ep+"/delete", nil).expect(t, http.StatusUnprocessableEntity, "Tick the box to confirm")
	})
	t.Run("Delete", func(t *testing.T) {
		a := owner.post(ep+"/delete", url.Values{"confirm": {"yes"}})
		if a.Status != http.StatusSeeOther {
			t.Fatalf("delete: %d\n%s", a.Status, visibleText(a.Body))
		}
		owner.get(a.location()).expect(t, http.StatusOK, "The endpoint was deleted.", "No endpoint yet")
	})
}

var (
	passwordOnPage = regexp.MustCompile(`id="registry-password" class="secret" readonly value="([^"]+)"`)
	userOnPage     = regexp.MustCompile(`<code id="username">(cap_[0-9a-f-]+)</code>`)
	capOnPage      = regexp.MustCompile(`name="capability" value="([^"]+)"`)
)

func TestDownloadEndsInAPull(t *testing.T) {
	st := startDeliveryStack(t)
	base := startParlor(t, st.GatewayURL)
	v := newVisitor(t, base)
	v.signUp(uniqueEmail("puller"))
	acct := personalAccount(t, v)
	img := st.PushImage("platform", "1.2.3", 2048, 1)
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if code, raw := st.Call("POST", st.BoxURL+"/v1/operator/releases", st.StaffToken,
		map[string]string{"product": "platform", "version": "1.2.3"}, nil); code != http.StatusCreated {
		t.Fatalf("publish: %d %s", code, raw)
	}
	st.grant(t, acct, "platform", "^1.0.0")

	t.Run("VersionsInRange", func(t *testing.T) {
		page := v.get("/app/accounts/"+acct+"/downloads").expect(t, http.StatusOK, "Versions", "platform 1.2.3")
		if !strings.Contains(page.Body, `id="version_range" name="version_range" placeholder="^1.2.0" value="^1.0.0"`) {
			t.Errorf("the downloads page does not fill in the held range ^1.0.0")
		}
	})
	t.Run("ErrNoCapability", func(t *testing.T) {
		v.post("/app/accounts/"+acct+"/downloads/exchange", nil).
			expect(t, http.StatusUnprocessableEntity, "Get a download capability first")
	})
	t.Run("ErrUnknownCapability", func(t *testing.T) {
		v.post("/app/accounts/"+acct+"/downloads/exchange", url.Values{"capability": {"cap_nothing"}}).
			expect(t, http.StatusNotFound, "This capability is not valid.")
	})

	got := v.post("/app/accounts/"+acct+"/downloads", url.Values{"artifact": {"platform"}, "version_range": {"^1.2.0"}}).
		expect(t, http.StatusOK, "Capability for platform ^1.2.0", "Get a registry login")
	cm := capOnPage.FindStringSubmatch(got.Body)
	if cm == nil {
		t.Fatalf("no exchange form:\n%s", visibleText(got.Body))
	}
	t.Run("ErrOutsiderKeepsTheCapabilityUnspent", func(t *testing.T) {
		outsider := newVisitor(t, base)
		outsider.signUp(uniqueEmail("outsider"))
		outsider.post("/app/accounts/"+acct+"/downloads/exchange", url.Values{"capability": {cm[1]}}).
			expect(t, http.StatusNotFound, "nothing here")
	})
	page := v.post("/app/accounts/"+acct+"/downloads/exchange", url.Values{"capability": {cm[1]}}).
		expect(t, http.StatusCreated, "Registry login for platform", "Registry "+st.GatewayHost, "Expires", "^1.2.0", "shown only now")
	for _, cmd := range []string{"docker login " + st.GatewayHost, "docker pull " + st.GatewayHost + "/platform:1.2.3",
		"crane --insecure pull " + st.GatewayHost + "/platform:1.2.3", "oras --plain-http pull " + st.GatewayHost + "/platform:1.2.3"} {
		if !strings.Contains(page.Body, cmd) {
			t.Errorf("the page lacks the command %q", cmd)
		}
	}
	if !strings.Contains(page.Body, `data-copy="registry-password"`) {
		t.Errorf("the password has no copy button")
	}
	pm, um := passwordOnPage.FindStringSubmatch(page.Body), userOnPage.FindStringSubmatch(page.Body)
	if pm == nil || um == nil {
		t.Fatalf("no username or password on the page:\n%s", visibleText(page.Body))
	}

	t.Run("ErrCapabilityUsedTwice", func(t *testing.T) {
		v.post("/app/accounts/"+acct+"/downloads/exchange", url.Values{"capability": {cm[1]}}).
			expect(t, http.StatusGone, "already been exchanged")
	})

	ref, err := name.NewTag(st.GatewayHost+"/platform:1.2.3", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithAuth(&authn.Basic{Username: um[1], Password: pm[1]}))
	if err != nil {
		t.Fatalf("pull through the gateway with the page's credential: %v", err)
	}
	if desc.Digest != want {
		t.Errorf("pulled digest %s, want %s", desc.Digest, want)
	}
	v.get("/app/accounts/"+acct+"/pulls").expect(t, http.StatusOK, "platform:1.2.3", want.String(), um[1])
}

func TestNewPagesRefuseCrossOriginForms(t *testing.T) {
	base := startParlor(t, "http://127.0.0.1:1")
	id := "00000000-0000-0000-0000-000000000000"
	for _, path := range []string{
		"/app/preferences", "/app/accounts/" + id + "/downloads/exchange", "/app/accounts/" + id + "/webhooks",
		"/app/accounts/" + id + "/webhooks/" + id + "/rotate", "/app/accounts/" + id + "/webhooks/" + id + "/disable",
		"/app/accounts/" + id + "/webhooks/" + id + "/enable", "/app/accounts/" + id + "/webhooks/" + id + "/delete",
		"/app/accounts/" + id + "/webhooks/" + id + "/deliveries/" + id + "/retry",
	} {
		req, err := http.NewRequest("POST", base+path, strings.NewReader("x=1"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST %s: status %d, want 403", path, resp.StatusCode)
		}
	}
}

func TestNewPagesSayThePlatformIsUnavailable(t *testing.T) {
	// A gateway that answers every API call with 503, and identity's /v1/me
	// as a signed-in user, so each page reaches its own call.
	gw := http.NewServeMux()
	gw.HandleFunc("GET /v1/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"u1","email":"a@example.com"}`))
	})
	gw.HandleFunc("GET /v1/accounts/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"a1","name":"A","role":"owner"}`))
	})
	gw.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"about:blank","status":503,"title":"Unavailable","detail":"down","code":"unavailable","trace_id":"00000000000000000000000000000000"}`))
	})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	v := newVisitor(t, startParlor(t, srv.URL))
	v.cookie = "session-token"
	for _, path := range []string{"/app/preferences", "/app/accounts/a1/webhooks", "/app/accounts/a1/pulls",
		"/app/accounts/a1/webhooks/e1/deliveries"} {
		v.get(path).expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
	}
	v.post("/app/accounts/a1/downloads/exchange", url.Values{"capability": {"c"}}).
		expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
	v.post("/app/preferences", url.Values{"product_updates": {"on"}}).
		expect(t, http.StatusServiceUnavailable, "The platform is unavailable right now")
}
