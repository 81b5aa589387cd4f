//go:build e2e

package parlor_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// journeyMuse: the owner opens the team's Models page, asks the
// development model echo a question in the playground and reads the
// answer streamed into the page (the script's fetch, no navigation);
// at a phone's width a provider credential is added and the page, its
// tables included, fits the screen.
func journeyMuse(t *testing.T, owner, member, operator *browser, base, team string) {
	t.Helper()
	models := base + "/app/accounts/" + team + "/models"
	owner.do("models", []string{"Playground", "This account has no provider credentials."}, chromedp.Navigate(models))
	owner.do("playground-streamed", []string{"Which rocket launches first?"},
		chromedp.SendKeys(chromedp.CSS(`#prompt`), "Which rocket launches first?"),
		submit(`#playground`))
	if got := owner.location(); !strings.HasSuffix(got, "/models") {
		t.Errorf("the playground navigated to %s: the answer did not stream into the page", got)
	}
	member.do("member-models", []string{"Playground", "Budget and usage"}, chromedp.Navigate(models))
	if n, _ := chromedp.Run(member.ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[action$="/models/credentials"]').length`)); n != 0 {
		t.Errorf("a member sees the form to add a provider credential")
	}
	owner.do("phone-models-credential", []string{"The provider credential was added.", "…7788"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.SendKeys(chromedp.CSS(`#cred-name`), "Rocket lab"),
		chromedp.SendKeys(chromedp.CSS(`#api_key`), "sk-journey-key-7788"),
		submit(`form[action$="/models/credentials"]`))
	owner.fitsWidth("phone-models-credential")
	owner.do("desktop-again", []string{"Your accounts"}, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/app"))
}
