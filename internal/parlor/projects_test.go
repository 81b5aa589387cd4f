package parlor_test

import (
	"bytes"
	"image"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestProjectsPublishedBrowsedAndStarred: an owner publishes from the
// account's Projects tab (refusals said per field, the form kept), a
// signed-out visitor finds the project in the directory by search and by
// tag and reads its page with the description rendered safe, a signed-in
// user stars it, a rename moves the page with a 301, an unlisted project
// stays out of the directory, and a deletion frees the address.
func TestProjectsPublishedBrowsedAndStarred(t *testing.T) {
	st := startStack(t)
	owner := newVisitor(t, st.GatewayURL)
	owner.signUp(uniqueEmail("projects"))
	a := owner.post("/app/accounts", url.Values{"name": {"Makers " + uniqueEmail("m")[2:10]}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("create account: %d", a.Status)
	}
	acct := accountIDFrom(t, a.location())
	tab := "/app/accounts/" + acct + "/projects"
	owner.get(tab).expect(t, http.StatusOK, "This account has published no project yet.", "Publish a project")

	kettle := url.Values{"name": {"Kettle"}, "summary": {"Boils water for the team"}, "tags": {"cli, Go"}, "uses_kit": {"on"},
		"description":  {"# Kettle\n\nBoils *water*.<script>alert(1)</script> [x](javascript:alert(2))"},
		"homepage_url": {"https://kettle.example"}, "visibility": {"public"}}
	refused := []struct {
		name  string
		patch url.Values
		says  []string
	}{
		{"no name", url.Values{"name": {""}}, []string{"Please correct the fields marked below."}},
		{"plain http home page", url.Values{"homepage_url": {"http://kettle.example"}}, []string{"Please correct the fields marked below."}},
		{"reserved address", url.Values{"slug": {"admin"}}, []string{"Please correct the fields marked below."}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{}
			for k, v := range kettle {
				form[k] = v
			}
			for k, v := range tc.patch {
				form[k] = v
			}
			got := owner.post(tab, form).expect(t, http.StatusUnprocessableEntity, tc.says...)
			if !strings.Contains(got.Body, `value="Boils water for the team"`) {
				t.Errorf("the refused form lost what was typed")
			}
		})
	}
	a = owner.post(tab, kettle)
	if a.Status != http.StatusSeeOther || !strings.Contains(a.location(), "done=project-published") {
		t.Fatalf("publish: %d to %q\n%s", a.Status, a.location(), visibleText(a.Body))
	}
	owner.get(strings.Split(a.location(), "#")[0]).expect(t, http.StatusOK, "The project was published.", "Kettle", "public")
	owner.post(tab, kettle).expect(t, http.StatusConflict, "That address is taken")
	unlisted := url.Values{"name": {"Secret Sauce"}, "visibility": {"unlisted"}}
	if a := owner.post(tab, unlisted); a.Status != http.StatusSeeOther {
		t.Fatalf("publish unlisted: %d\n%s", a.Status, visibleText(a.Body))
	}

	// A signed-out visitor browses, searches and reads.
	visitor := newVisitor(t, st.GatewayURL)
	dir := visitor.get("/projects").expect(t, http.StatusOK, "Kettle", "Boils water for the team", "cli (1)", "go (1)")
	if strings.Contains(dir.Body, "Secret Sauce") {
		t.Error("an unlisted project is in the directory")
	}
	visitor.get("/projects?q=boils").expect(t, http.StatusOK, "Kettle")
	if got := visitor.get("/projects?q=nothing-like-it").expect(t, http.StatusOK, "No project matches this search."); strings.Contains(got.Body, "Kettle") {
		t.Error("a search for something else lists Kettle")
	}
	visitor.get("/projects?tag=cli").expect(t, http.StatusOK, "Tagged cli", "Kettle")
	visitor.get("/projects?q="+url.QueryEscape(`"unterminated OR (AND *`)).expect(t, http.StatusOK)
	page := visitor.get("/projects/kettle").expect(t, http.StatusOK, "Kettle", "Boils", "Built with kit", "Sign in to star this project.")
	if strings.Contains(page.Body, "<script>alert") || strings.Contains(page.Body, `href="javascript:`) {
		t.Errorf("the description is not safe:\n%s", page.Body)
	}
	if !strings.Contains(page.Body, "<em>water</em>") {
		t.Errorf("the description's Markdown is not rendered")
	}
	visitor.get("/projects/secret-sauce").expect(t, http.StatusOK, "Secret Sauce")
	visitor.get("/projects/no-such-project").expect(t, http.StatusNotFound)
	if a := visitor.post("/projects/kettle/star", url.Values{}); a.Status != http.StatusSeeOther || !strings.HasPrefix(a.location(), "/signin") {
		t.Errorf("a signed-out star: %d to %q, want the sign-in page", a.Status, a.location())
	}

	// Signed in, a user stars it and unstars it.
	fan := newVisitor(t, st.GatewayURL)
	fan.signUp(uniqueEmail("fan"))
	a = fan.post("/projects/kettle/star", url.Values{})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("star: %d\n%s", a.Status, visibleText(a.Body))
	}
	fan.get(a.location()).expect(t, http.StatusOK, "You starred this project.", "Stars 1", "Unstar Kettle")
	fan.get(fan.post("/projects/kettle/unstar", url.Values{}).location()).expect(t, http.StatusOK, "Stars 0", "Star Kettle")

	// Someone else's account page cannot change it.
	fanAcct := accountIDFrom(t, fan.post("/app/accounts", url.Values{"name": {"Fans " + uniqueEmail("f")[2:10]}}).location())
	fan.post("/app/accounts/"+fanAcct+"/projects/kettle", kettle).expect(t, http.StatusNotFound)
	fan.post("/app/accounts/"+acct+"/projects/kettle/delete", url.Values{}).expect(t, http.StatusNotFound)

	// A rename moves the page; the old address answers 301.
	owner.get(tab+"?edit=kettle").expect(t, http.StatusOK, "Edit Kettle", "Save Kettle")
	renamed := url.Values{}
	for k, v := range kettle {
		renamed[k] = v
	}
	renamed.Set("slug", "kettle-pro")
	renamed.Set("name", "Kettle Pro")
	if a := owner.post(tab+"/kettle", renamed); a.Status != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", a.Status, visibleText(a.Body))
	}
	if a := visitor.get("/projects/kettle"); a.Status != http.StatusMovedPermanently || a.location() != "/projects/kettle-pro" {
		t.Errorf("the old address: %d to %q, want 301 to /projects/kettle-pro", a.Status, a.location())
	}
	visitor.get("/projects/kettle-pro").expect(t, http.StatusOK, "Kettle Pro")

	a = owner.post(tab+"/kettle-pro/delete", url.Values{})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", a.Status, visibleText(a.Body))
	}
	owner.get(a.location()).expect(t, http.StatusOK, "The project was deleted")
	visitor.get("/projects/kettle-pro").expect(t, http.StatusNotFound)
}

// postMultipart sends a same-origin multipart form with one file field.
func (v *visitor) postMultipart(path string, form url.Values, field, filename string, file []byte) answer {
	v.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range form {
		for _, val := range vs {
			_ = mw.WriteField(k, val)
		}
	}
	if field != "" {
		fw, err := mw.CreateFormFile(field, filename)
		if err != nil {
			v.t.Fatal(err)
		}
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req, err := http.NewRequest("POST", v.base+path, &body)
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", v.base)
	return v.send(req)
}

// TestProjectLogoThroughDarkroom: a logo chosen on the account's Projects
// tab is public at darkroom only as its thumb variant (re-encoded, no
// metadata of the uploaded file), accepted by pantry, shown on the
// project's page and served through the gateway; a file that is no image
// is refused on the logo field with the form kept; an edit without a new
// file keeps the logo, one with a new file deletes the old logo, and
// deleting the project deletes its logo.
func TestProjectLogoThroughDarkroom(t *testing.T) {
	st := startStackWith(t, true)
	owner := newVisitor(t, st.GatewayURL)
	owner.signUp(uniqueEmail("logo"))
	acct := accountIDFrom(t, owner.post("/app/accounts", url.Values{"name": {"Logos " + uniqueEmail("l")[2:10]}}).location())
	tab := "/app/accounts/" + acct + "/projects"

	const secret = "GPS 51.4779N 0.0015W office"
	src := pngWithText(t, secret)
	form := url.Values{"name": {"Lighthouse"}, "summary": {"Guides ships"}, "visibility": {"public"}}

	refused := owner.postMultipart(tab, form, "logo", "notes.txt", []byte("just some words, not an image at all")).
		expect(t, http.StatusUnprocessableEntity, "The logo must be a PNG, JPEG, WebP or GIF image.")
	if !strings.Contains(refused.Body, `value="Guides ships"`) {
		t.Errorf("the refused form lost what was typed")
	}
	logo := func(path string) string {
		t.Helper()
		if a := owner.postMultipart(path, form, "logo", "lighthouse.png", src); a.Status != http.StatusSeeOther {
			t.Fatalf("save with a logo: %d\n%s", a.Status, visibleText(a.Body))
		}
		page := owner.get("/projects/lighthouse").expect(t, http.StatusOK, "Lighthouse")
		m := regexp.MustCompile(`<img src="/v1/media/([^"/]+)/thumb"`).FindStringSubmatch(page.Body)
		if m == nil {
			t.Fatalf("the project's page shows no logo:\n%s", page.Body)
		}
		return m[1]
	}
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(st.GatewayURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	first := logo(tab)
	if status, _ := get("/v1/media/" + first + "/thumb"); status != http.StatusOK {
		t.Errorf("the logo's thumb through the gateway: %d", status)
	}
	// The public media is darkroom's variant, not the uploaded file.
	status, body := get("/v1/media/" + first)
	if status != http.StatusOK || bytes.Contains(body, []byte(secret)) || bytes.Equal(body, src) {
		t.Errorf("the public logo (%d) is the uploaded file or carries its metadata", status)
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(body)); err != nil || cfg.Width != 128 || cfg.Height != 128 {
		t.Errorf("the public logo is %dx%d (%v), want the 128x128 thumb", cfg.Width, cfg.Height, err)
	}

	// An edit without a new file keeps the logo.
	form.Set("summary", "Guides ships home")
	if a := owner.postMultipart(tab+"/lighthouse", form, "", "", nil); a.Status != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", a.Status, visibleText(a.Body))
	}
	if page := owner.get("/projects/lighthouse").expect(t, http.StatusOK, "Guides ships home"); !strings.Contains(page.Body, first+"/thumb") {
		t.Errorf("the edit dropped the logo")
	}
	// A new logo replaces the old one, which is deleted.
	second := logo(tab + "/lighthouse")
	if second == first {
		t.Fatal("a new logo kept the old media")
	}
	if status, _ := get("/v1/media/" + first + "/thumb"); status != http.StatusNotFound {
		t.Errorf("the replaced logo: %d, want 404 (deleted)", status)
	}
	// Deleting the project deletes its logo.
	if a := owner.post(tab+"/lighthouse/delete", url.Values{}); a.Status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", a.Status, visibleText(a.Body))
	}
	if status, _ := get("/v1/media/" + second + "/thumb"); status != http.StatusNotFound {
		t.Errorf("the deleted project's logo: %d, want 404 (deleted)", status)
	}
}
