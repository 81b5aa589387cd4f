package parlor_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	pngenc "image/png"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// pngWithText is a 300×200 PNG carrying a tEXt chunk (metadata) with
// secret in it.
func pngWithText(t *testing.T, secret string) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for x := range 300 {
		for y := range 200 {
			img.Set(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 90, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := pngenc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := "Comment\x00" + secret
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"+data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE([]byte("tEXt"+data)))
	// After the signature (8 bytes) and IHDR (25 bytes).
	b := buf.Bytes()
	return append(append(append([]byte{}, b[:33]...), chunk...), b[33:]...)
}

// TestAvatarThroughDarkroom: an avatar uploaded in Settings is shown
// there and beside the user's name on every page, as a thumb of public
// media that is darkroom's re-encoding (square, without the uploaded
// file's metadata), never the uploaded file; a file that is no image is
// refused on the field; a new avatar replaces the old one, whose media is
// deleted, and removing it leaves none.
func TestAvatarThroughDarkroom(t *testing.T) {
	st := startStackWith(t, true)
	user := newVisitor(t, st.GatewayURL)
	user.signUp(uniqueEmail("avatar"))
	user.get("/app/settings").expect(t, http.StatusOK, "You have no avatar yet.")

	user.postMultipart("/app/settings/avatar", nil, "avatar", "notes.txt", []byte("just some words, not an image at all")).
		expect(t, http.StatusUnprocessableEntity, "The avatar must be a PNG, JPEG, WebP or GIF image.")
	user.postMultipart("/app/settings/avatar", nil, "", "", nil).
		expect(t, http.StatusUnprocessableEntity, "Choose an image to upload.")

	const secret = "GPS 51.4779N 0.0015W home"
	src := pngWithText(t, secret)
	avatarOf := func() string {
		t.Helper()
		page := user.postMultipart("/app/settings/avatar", nil, "avatar", "me/../../face.png", src)
		if page.Status != http.StatusSeeOther {
			t.Fatalf("upload: %d\n%s", page.Status, visibleText(page.Body))
		}
		settings := user.get(page.location()).expect(t, http.StatusOK, "Your new avatar is shown beside your name.")
		m := regexp.MustCompile(`<img src="/v1/media/([^"/]+)/thumb" alt="Your avatar"`).FindStringSubmatch(settings.Body)
		if m == nil {
			t.Fatalf("Settings shows no avatar:\n%s", settings.Body)
		}
		// The header beside the name, on another page too.
		if home := user.get("/app").expect(t, http.StatusOK); !strings.Contains(home.Body, `<img src="/v1/media/`+m[1]+`/thumb" alt="" width="24" height="24" class="avatar">`) {
			t.Errorf("the header shows no avatar beside the name")
		}
		return m[1]
	}
	first := avatarOf()

	// The public media is darkroom's variant, not the uploaded file.
	resp, err := http.Get(st.GatewayURL + "/v1/media/" + first)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the public avatar: %d", resp.StatusCode)
	}
	if bytes.Contains(body, []byte(secret)) || bytes.Equal(body, src) {
		t.Error("the public avatar carries the uploaded file's metadata")
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(body))
	if err != nil || cfg.Width != 128 || cfg.Height != 128 {
		t.Errorf("the public avatar is %dx%d (%v), want the 128x128 thumb", cfg.Width, cfg.Height, err)
	}
	status := func(id string) int {
		t.Helper()
		resp, err := http.Get(st.GatewayURL + "/v1/media/" + id + "/thumb")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(first); got != http.StatusOK {
		t.Errorf("the avatar's thumb through the gateway: %d", got)
	}

	second := avatarOf()
	if second == first {
		t.Fatal("a new avatar kept the old media")
	}
	if got := status(first); got != http.StatusNotFound {
		t.Errorf("the replaced avatar: %d, want 404 (deleted)", got)
	}

	a := user.post("/app/settings/avatar/remove", url.Values{})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("remove: %d\n%s", a.Status, visibleText(a.Body))
	}
	if page := user.get(a.location()).expect(t, http.StatusOK, "Your avatar is removed.", "You have no avatar yet."); strings.Contains(page.Body, "/v1/media/") {
		t.Error("a removed avatar is still shown")
	}
	if got := status(second); got != http.StatusNotFound {
		t.Errorf("the removed avatar: %d, want 404 (deleted)", got)
	}
}
