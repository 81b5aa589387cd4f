//go:build e2e

package parlor_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/platformco/platform/internal/e2e"
)

// journeyLicensing walks licensing.md §§1, 2, 4 and 6: the team's
// holdings after the operator's grant of platform; an installation its
// software activates through the API with an API key, listed on the
// Installations page and in the console and deactivated from the page; a
// release pipeline publishing files with a staff publishing key made in
// the console; and the Downloads page listing them with their checksums,
// also at a phone's width.
func journeyLicensing(t *testing.T, owner, member, operator *browser, base, team string) {
	t.Helper()
	owner.do("licensing-holdings", []string{"every version", "platform", "kit"},
		chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/app/accounts/"+team+"/entitlements"))
	member.do("licensing-holdings-member", []string{"every version", "platform"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/entitlements"))

	// The installed software holds an API key with installations:write
	// and artifacts:fetch.
	owner.do("licensing-software-key", []string{"Your new API key"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/api_keys"),
		chromedp.SendKeys(chromedp.CSS(`#name`), "launch pad software"),
		chromedp.Click(chromedp.CSS(`input[value="installations:write"]`)),
		chromedp.Click(chromedp.CSS(`input[value="artifacts:fetch"]`)),
		submit(`form[action$="/api_keys"]`))
	key := owner.value(`#api-token`)
	body, _ := json.Marshal(map[string]string{"product": "platform", "fingerprint": "launchpad-7f3a", "name": "Launch pad 1", "version": "1.0.0"})
	req, _ := http.NewRequest("POST", base+"/v1/accounts/"+team+"/installations", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("activate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("activate through the gateway with the key = %d, want 201", resp.StatusCode)
	}
	owner.do("licensing-installations", []string{"Launch pad 1", "launchpad-7f3a", "active"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/installations"))
	operator.do("licensing-console-installations", []string{"Launch pad 1", "launchpad-7f3a"},
		chromedp.Navigate(base+"/operator/accounts/"+team))
	owner.do("licensing-deactivated", []string{"The installation is deactivated", "deactivated"},
		submit(`form[action$="/deactivate"]`))

	// The release pipeline publishes with a staff key, not a session.
	operator.do("licensing-publish-key", []string{"Your new publishing key", "release pipeline"},
		chromedp.Navigate(base+"/operator/releases"),
		chromedp.SendKeys(chromedp.CSS(`#key_name`), "release pipeline"),
		submit(`form[action="/operator/releases/keys"]`))
	publishKey := operator.value(`#publish-token`)
	dir := t.TempDir()
	content := bytes.Repeat([]byte("launch pad 1.1.0\n"), 512)
	file := filepath.Join(dir, "launchpad-linux-amd64.tar.gz")
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	e2e.MustRun(t, e2e.Env{"PLATFORM_TOKEN": publishKey, "BOX_URL": base, "KEYHOLDER_REGISTRY_URL": "http://" + devRegistry},
		"keyholder", "publish", "--repository", "platform", "--version", "1.1.0", "--notes", "Files for the launch pad.", "--files", file)
	owner.do("licensing-downloads", []string{"platform 1.1.0", "Files for the launch pad.", "launchpad-linux-amd64.tar.gz", hex.EncodeToString(sum[:])},
		chromedp.Navigate(base+"/app/accounts/"+team+"/downloads"))
	// The file the page links is served byte-identical, with its digest,
	// to the software's key (it holds artifacts:fetch too).
	req, _ = http.NewRequest("GET", base+"/v1/accounts/"+team+"/downloads/platform/1.1.0/files/launchpad-linux-amd64.tar.gz", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, content) {
		t.Errorf("download = %d, %d bytes; want 200 and the %d published", resp.StatusCode, len(got), len(content))
	}
	if want := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"; resp.Header.Get("Repr-Digest") != want {
		t.Errorf("Repr-Digest = %q, want %q", resp.Header.Get("Repr-Digest"), want)
	}

	// At a phone's width: the tables scroll inside their frame.
	owner.do("licensing-phone-installations", []string{"Launch pad 1", "deactivated"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/app/accounts/"+team+"/installations"))
	owner.fitsWidth("licensing-phone-installations")
	owner.do("licensing-phone-downloads", []string{"launchpad-linux-amd64.tar.gz"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/downloads"))
	owner.fitsWidth("licensing-phone-downloads")
	// The console's Releases page now lists what the key published.
	operator.do("licensing-phone-publish-keys", []string{"1.1.0", "Files for the launch pad."},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/operator/releases"))
	operator.fitsWidth("licensing-phone-publish-keys")
	operator.do("licensing-revoke-publish-key", []string{"The publishing key was revoked"},
		submit(`form[action$="/revoke"][action^="/operator/releases/keys/"]`))
	owner.do("licensing-desktop", []string{"Your accounts"}, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/app"))
	operator.do("licensing-operator-desktop", []string{"Operator console"}, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/operator"))
}
