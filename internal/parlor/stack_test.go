package parlor_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/courier/push"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/darkroom/devs3"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/muse/musecmd"
	"github.com/platformco/platform/internal/pantry/pantrycmd"
	"github.com/platformco/platform/internal/parlor"
)

// stack is the real platform behind parlor: identity, box and the gateway
// on SQLite in a temporary directory, each on its own loopback port. The
// gateway also serves a parlor of its own at its origin, as in `platform
// dev`, for the flows that cross between the pages and the API (the
// OpenID Provider's).
type stack struct {
	GatewayURL string
	// IdentityURL is identity's own origin, its issuer.
	IdentityURL string
	IdentityDB  string
	// MailboxURL is courier's local mailbox (GET /dev/mail.json), where
	// identity's mail lands through its relay.
	MailboxURL string
}

func listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// startStack starts the platform and waits until the gateway is ready.
func startStack(t testing.TB) *stack {
	t.Helper()
	return startStackWith(t, false)
}

// startStackWith is startStack, with darkroom over the development S3
// server (routed by the gateway, asked by pantry) when media is true.
func startStackWith(t testing.TB, media bool) *stack {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	identityDB := "sqlite:" + filepath.Join(dir, "identity.db")
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	if err := identitycmd.Migrate(ctx, identityDB); err != nil {
		t.Fatal(err)
	}
	if err := boxcmd.Migrate(ctx, boxDB); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	idLn, idURL := listen(t)
	boxLn, boxURL := listen(t)
	gwLn, gwURL := listen(t)
	courierLn, courierURL := listen(t)
	parlorLn, parlorURL := listen(t)
	pantryLn, pantryURL := listen(t)
	pantryDB := "sqlite:" + filepath.Join(dir, "pantry.db")
	if _, err := pantrycmd.Command.Migrate(ctx, pantryDB); err != nil {
		t.Fatal(err)
	}
	courierDB := "sqlite:" + filepath.Join(dir, "courier.db")
	if err := couriercmd.Migrate(ctx, courierDB); err != nil {
		t.Fatal(err)
	}
	const courierSecret = "parlor-stack-identity-secret-0123456789"
	vapid, err := push.GenerateVAPID("mailto:push@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var courierCfg couriercmd.Config
	if err := config.Load(ctx, envOf(map[string]string{
		"DATABASE_URL": courierDB, "COURIER_ENV": "development", "COURIER_SECRET_BOX_KEY": base64.StdEncoding.EncodeToString(key),
		"COURIER_MAIL_ADAPTER": couriercmd.AdapterLocal, "COURIER_LOCAL_DIR": filepath.Join(dir, "mail"),
		"COURIER_MAIL_FROM": "Platform <no-reply@example.com>", "COURIER_SERVICE_TOKENS": "identity:" + courierSecret,
		"COURIER_VAPID_PUBLIC_KEY": vapid.PublicKey, "COURIER_VAPID_PRIVATE_KEY": vapid.PrivateKey, "COURIER_VAPID_SUBJECT": vapid.Subject,
		"IDENTITY_ISSUER": idURL, "COURIER_IDENTITY_URL": idURL,
	}), &courierCfg); err != nil {
		t.Fatal(err)
	}
	var (
		idCfg  identitycmd.Config
		boxCfg boxcmd.Config
	)
	if err := config.Load(ctx, envOf(map[string]string{
		"DATABASE_URL": identityDB, "IDENTITY_MASTER_KEY": base64.StdEncoding.EncodeToString(key),
		"IDENTITY_ISSUER": idURL, "IDENTITY_PUBLIC_URL": gwURL,
		"IDENTITY_COURIER_URL": courierURL, "IDENTITY_COURIER_TOKEN": "identity:" + courierSecret,
	}), &idCfg); err != nil {
		t.Fatal(err)
	}
	if err := config.Load(ctx, envOf(map[string]string{"DATABASE_URL": boxDB, "BOX_IDENTITY_URL": idURL,
		"BOX_MASTER_KEY": base64.StdEncoding.EncodeToString(key)}), &boxCfg); err != nil {
		t.Fatal(err)
	}
	pantryEnv := map[string]string{"DATABASE_URL": pantryDB, "IDENTITY_ISSUER": idURL, "PANTRY_IDENTITY_URL": idURL}
	// muse with the development echo model, as platform dev runs it.
	museLn, museURL := listen(t)
	museDB := "sqlite:" + filepath.Join(dir, "muse.db")
	if _, err := musecmd.Command.Migrate(ctx, museDB); err != nil {
		t.Fatal(err)
	}
	var museCfg musecmd.Config
	if err := musecmd.Command.Load(ctx, envOf(map[string]string{"DATABASE_URL": museDB, "IDENTITY_ISSUER": idURL, "MUSE_IDENTITY_URL": idURL,
		"MUSE_VAULT_KEY": base64.StdEncoding.EncodeToString(key), "MUSE_ENV": "development", "MUSE_ECHO_ALIAS": "echo"}), &museCfg); err != nil {
		t.Fatal(err)
	}
	gwEnv := map[string]string{
		"IDENTITY_URL": idURL, "IDENTITY_ISSUER": idURL, "BOX_URL": boxURL, "PARLOR_URL": parlorURL, "COURIER_URL": courierURL, "PANTRY_URL": pantryURL, "MUSE_URL": museURL,
		// Every test request reaches the gateway from parlor's one address.
		"GATEWAY_RATE_LIMIT": "100000",
	}
	var serveDarkroom func() error
	if media {
		darkroomURL, serve := startDarkroom(t, ctx, dir, idURL)
		pantryEnv["PANTRY_DARKROOM_URL"], gwEnv["DARKROOM_URL"], serveDarkroom = darkroomURL, darkroomURL, serve
	}
	var pantryCfg pantrycmd.Config
	if err := pantrycmd.Command.Load(ctx, envOf(pantryEnv), &pantryCfg); err != nil {
		t.Fatal(err)
	}
	var gwCfg gatewaycmd.Config
	if err := config.Load(ctx, envOf(gwEnv), &gwCfg); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	pages, err := parlor.New(parlor.Deps{API: parlor.NewClient(gwURL, 5*time.Second), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	parlorSrv := &http.Server{Handler: pages, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = parlorSrv.Serve(parlorLn) }()
	t.Cleanup(func() { _ = parlorSrv.Close() })
	var wg sync.WaitGroup
	serves := []func() error{
		func() error { return identitycmd.Serve(ctx, idCfg, logger, idLn) },
		func() error { return boxcmd.Serve(ctx, boxCfg, logger, boxLn) },
		func() error { return gatewaycmd.Serve(ctx, gwCfg, logger, gwLn) },
		func() error { return couriercmd.Serve(ctx, courierCfg, logger, courierLn) },
		func() error { return pantrycmd.Serve(ctx, pantryCfg, logger, pantryLn) },
		func() error { return musecmd.Serve(ctx, museCfg, logger, museLn) },
	}
	if serveDarkroom != nil {
		serves = append(serves, serveDarkroom)
	}
	for _, serve := range serves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serve(); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("serve: %v", err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(gwURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not become ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &stack{GatewayURL: gwURL, IdentityURL: idURL, IdentityDB: identityDB, MailboxURL: courierURL + "/dev/mail.json"}
}

// makeStaff marks email as staff, as `platform identity staff add` does.
func (s *stack) makeStaff(t testing.TB, email string) {
	t.Helper()
	env := cli.Env{Getenv: envOf(map[string]string{"DATABASE_URL": s.IdentityDB}), Stdout: io.Discard, Stderr: io.Discard}
	if err := identitycmd.Command.Run(context.Background(), []string{"staff", "add", email}, env); err != nil {
		t.Fatalf("staff add %s: %v", email, err)
	}
}

// startParlor serves parlor against apiURL.
func startParlor(t testing.TB, apiURL string) string {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := parlor.New(parlor.Deps{API: parlor.NewClient(apiURL, 5*time.Second), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// testLog writes parlor's warnings into the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// visitor is a browser as far as parlor can tell: it keeps the session
// cookie (by hand: the cookie is Secure and the test server is plain
// HTTP), sends forms the way a browser does, and does not follow
// redirects, so tests see them.
type visitor struct {
	t      *testing.T
	base   string
	cookie string
	// others are the page's other cookies, kept as a browser keeps them.
	others map[string]string
	client *http.Client
}

func newVisitor(t *testing.T, base string) *visitor {
	return &visitor{t: t, base: base, client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type answer struct {
	Status int
	Header http.Header
	Body   string
}

func (a answer) location() string { return a.Header.Get("Location") }

func (v *visitor) get(path string) answer {
	v.t.Helper()
	req, err := http.NewRequest("GET", v.base+path, nil)
	if err != nil {
		v.t.Fatal(err)
	}
	return v.send(req)
}

// post sends a same-origin form, as a browser does from parlor's page.
func (v *visitor) post(path string, form url.Values) answer {
	v.t.Helper()
	req, err := http.NewRequest("POST", v.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", v.base)
	return v.send(req)
}

func (v *visitor) send(req *http.Request) answer {
	v.t.Helper()
	if v.cookie != "" {
		req.AddCookie(&http.Cookie{Name: parlor.CookieName, Value: v.cookie})
	}
	for name, value := range v.others {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		switch {
		case c.Name == parlor.CookieName:
			v.cookie = c.Value
			if c.MaxAge < 0 {
				v.cookie = ""
			}
		case c.MaxAge < 0:
			delete(v.others, c.Name)
		default:
			if v.others == nil {
				v.others = map[string]string{}
			}
			v.others[c.Name] = c.Value
		}
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
}

// expect fails unless the answer has status and its page shows every
// one of texts (as the page's text, tags removed).
func (a answer) expect(t *testing.T, status int, texts ...string) answer {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status = %d, want %d\n%s", a.Status, status, visibleText(a.Body))
	}
	if inlineCode.MatchString(a.Body) {
		t.Errorf("the page has inline script or style, which the policy blocks:\n%s", inlineCode.FindString(a.Body))
	}
	page := visibleText(a.Body)
	for _, want := range texts {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q:\n%s", want, page)
		}
	}
	return a
}

var (
	// inlineCode is inline script, an event handler attribute or a style
	// attribute: the Content-Security-Policy blocks all three.
	inlineCode = regexp.MustCompile(`<script(?:[^>]*)>\s*[^<\s]|\son[a-z]+=|\sstyle=`)
	tags       = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces     = regexp.MustCompile(`\s+`)
)

// visibleText is a page's text as a reader sees it, roughly: tags gone,
// entities decoded, white space collapsed.
func visibleText(html string) string {
	s := tags.ReplaceAllString(html, " ")
	s = strings.NewReplacer("&#39;", "'", "&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`).Replace(s)
	return strings.TrimSpace(spaces.ReplaceAllString(s, " "))
}

// signUp registers email through parlor's form and keeps the session.
func (v *visitor) signUp(email string) {
	v.t.Helper()
	a := v.post("/signup", url.Values{"email": {email}, "password": {"correct horse battery"}})
	if a.Status != http.StatusSeeOther || v.cookie == "" {
		v.t.Fatalf("sign up %s: status %d, cookie %t\n%s", email, a.Status, v.cookie != "", visibleText(a.Body))
	}
}

var idInPath = regexp.MustCompile(`/app/accounts/([0-9a-f-]{36})`)

// accountIDFrom is the account id in a redirect to an account's page.
func accountIDFrom(t *testing.T, location string) string {
	t.Helper()
	m := idInPath.FindStringSubmatch(location)
	if m == nil {
		t.Fatalf("no account id in %q", location)
	}
	return m[1]
}

func uniqueEmail(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%x@example.com", name, b)
}

// linkIn waits for a mail to address in the mailbox whose text carries a
// link to path (such as "/verify") and returns the link's path and query.
func (s *stack) linkIn(t *testing.T, address, path string) string {
	t.Helper()
	link := regexp.MustCompile(regexp.QuoteMeta(path) + `\?token=[A-Za-z0-9_%.~-]+`)
	var found string
	deadline := time.Now().Add(15 * time.Second)
	for found == "" {
		res, err := http.Get(s.MailboxURL)
		if err != nil {
			t.Fatalf("mailbox: %v", err)
		}
		var box struct {
			Messages []struct{ To, Text string }
		}
		err = json.NewDecoder(res.Body).Decode(&box)
		res.Body.Close()
		if err != nil {
			t.Fatalf("mailbox: %v", err)
		}
		for _, m := range box.Messages { // newest first
			if strings.Contains(m.To, address) {
				if l := link.FindString(m.Text); l != "" {
					found = l
					break
				}
			}
		}
		if found == "" {
			if time.Now().After(deadline) {
				t.Fatalf("no mail to %s with a %s link reached the mailbox", address, path)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return found
}

// verify opens the verification link mailed to the visitor's address
// and presses its button.
func (v *visitor) verify(st *stack, address string) {
	v.t.Helper()
	link := st.linkIn(v.t, address, "/verify")
	v.get(link).expect(v.t, http.StatusOK, "Verify my address")
	v.post("/verify", url.Values{"token": {linkTokenOf(v.t, link)}}).expect(v.t, http.StatusOK, "Your email address is verified")
}

// linkTokenOf is the token of an emailed link (a path with ?token=).
func linkTokenOf(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("link %q has no token", link)
	}
	return u.Query().Get("token")
}

// startDarkroom migrates darkroom on SQLite under dir and returns its URL
// and its serve function, over the development S3 server on loopback.
func startDarkroom(t testing.TB, ctx context.Context, dir, issuer string) (string, func() error) {
	t.Helper()
	s3, err := devs3.New(devs3.Development, filepath.Join(dir, "s3"), "media")
	if err != nil {
		t.Fatal(err)
	}
	s3Srv := httptest.NewServer(s3)
	t.Cleanup(s3Srv.Close)
	db := "sqlite:" + filepath.Join(dir, "darkroom.db")
	if _, err := darkroomcmd.Command.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var cfg darkroomcmd.Config
	if err := darkroomcmd.Command.Load(ctx, envOf(map[string]string{
		"DATABASE_URL": db, "IDENTITY_ISSUER": issuer, "DARKROOM_ENV": darkroomcmd.Development,
		"DARKROOM_S3_ENDPOINT": s3Srv.URL, "DARKROOM_S3_BUCKET": "media",
		"DARKROOM_S3_ACCESS_KEY_ID": "dev", "DARKROOM_S3_SECRET_ACCESS_KEY": "development-only",
		"DARKROOM_URL_KEY": base64.StdEncoding.EncodeToString(key),
	}), &cfg); err != nil {
		t.Fatal(err)
	}
	ln, url := listen(t)
	return url, func() error { return darkroomcmd.Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }
}
