//go:build e2e

package parlor_test

import (
	"bytes"
	"image"
	"image/color"
	pngenc "image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/platformco/platform/internal/testutil"
)

// journeyDarkroom: the owner uploads an avatar in Settings, sees it
// there and beside their name once the browser has loaded it through the
// gateway from darkroom, reads the page at a phone's width, and removes
// it.
func journeyDarkroom(t *testing.T, owner, member, operator *browser, base, team string) {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 240, 180))
	for x := range 240 {
		for y := range 180 {
			img.Set(x, y, color.NRGBA{R: uint8(x), G: 120, B: uint8(y), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := pngenc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "face.png")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	owner.do("avatar-none", []string{"You have no avatar yet."}, chromedp.Navigate(base+"/app/settings"))
	owner.do("avatar-uploaded", []string{"Your new avatar is shown beside your name."},
		chromedp.SetUploadFiles(chromedp.CSS(`#avatar`), []string{file}),
		submit(`form[action="/app/settings/avatar"]`))
	// Both images (Settings' and the header's) load: a thumb of the
	// public avatar, 128 px square.
	testutil.Eventually(t, time.Minute, "the avatar images to load", func() bool {
		n, err := chromedp.Run(owner.ctx, chromedp.Evaluate[int](
			`[...document.querySelectorAll('img.avatar')].filter(i => i.complete && i.naturalWidth === 128 && i.naturalHeight === 128).length`))
		return err == nil && n >= 2
	})
	owner.do("avatar-phone", []string{"Your avatar, shown beside your name.", "Remove the avatar"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/app/settings?phone"))
	owner.fitsWidth("avatar-phone")
	owner.do("avatar-removed", []string{"Your avatar is removed.", "You have no avatar yet."},
		submit(`form[action="/app/settings/avatar/remove"]`))
	owner.do("avatar-desktop", []string{"Your accounts"}, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/app"))
}
