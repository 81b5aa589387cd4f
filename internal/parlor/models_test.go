package parlor_test

import (
	"bufio"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/testutil"
)

// TestModelsPage: the owner opens the account's Models page, asks the
// development echo model in the playground (the whole answer without
// script, server-sent events passed on with it), adds a provider
// credential whose key is never shown again (its last four are), routes
// an alias to it, sets a budget and sees this month's usage; refusals are
// said in words, and a credential an alias routes to is not removed.
func TestModelsPage(t *testing.T) {
	st := startStack(t)
	owner := newVisitor(t, st.GatewayURL)
	owner.signUp(uniqueEmail("models"))
	a := owner.post("/app/accounts", url.Values{"name": {"Modelers " + uniqueEmail("m")[2:10]}})
	if a.Status != http.StatusSeeOther {
		t.Fatalf("create account: %d", a.Status)
	}
	tab := "/app/accounts/" + accountIDFrom(t, a.location()) + "/models"
	// muse loads identity's key set when it starts: wait for the page.
	testutil.Eventually(t, 20*time.Second, "the Models page", func() bool { return owner.get(tab).Status == http.StatusOK })
	owner.get(tab).expect(t, http.StatusOK, "Playground", "echo", "No model was called this month.", "This account has no provider credentials.")

	// The playground without script: the page shows the whole answer.
	owner.post(tab+"/playground", url.Values{"model": {"echo"}, "prompt": {"Hello, models page"}}).
		expect(t, http.StatusOK, "Answer", "Hello, models page")
	// With script: muse's events, as they arrive.
	req, _ := http.NewRequest("POST", st.GatewayURL+tab+"/playground", strings.NewReader(url.Values{"model": {"echo"}, "prompt": {"Stream this"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Accept", "text/event-stream")
	streamed := owner.send(req)
	if streamed.Status != http.StatusOK || streamed.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s\n%s", streamed.Status, streamed.Header.Get("Content-Type"), streamed.Body)
	}
	var content strings.Builder
	done := false
	for sc := bufio.NewScanner(strings.NewReader(streamed.Body)); sc.Scan(); {
		line := sc.Text()
		if line == "data: [DONE]" {
			done = true
		}
		if m := deltaContent.FindStringSubmatch(line); m != nil {
			content.WriteString(m[1])
		}
	}
	if !done || content.String() != "Stream this" {
		t.Fatalf("streamed %q (done %v):\n%s", content.String(), done, streamed.Body)
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"NoQuestion", url.Values{"model": {"echo"}, "prompt": {"  "}}, http.StatusUnprocessableEntity, "Write a question for the model."},
		{"UnknownModel", url.Values{"model": {"nope"}, "prompt": {"hi"}}, http.StatusNotFound, "The model was not asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner.post(tab+"/playground", tc.form).expect(t, tc.status, tc.says)
			req, _ := http.NewRequest("POST", st.GatewayURL+tab+"/playground", strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Header.Set("Accept", "text/event-stream")
			if got := owner.send(req); got.Status != tc.status || !strings.Contains(got.Body, tc.says) {
				t.Errorf("streaming: %d %q", got.Status, got.Body)
			}
		})
	}

	// A provider credential: refused fields said, then added; the key is
	// never shown again, its last four are.
	owner.post(tab+"/credentials", url.Values{"provider": {"openai"}, "name": {"Local"}, "api_key": {"short"}}).
		expect(t, http.StatusUnprocessableEntity, "Please correct the fields marked below.")
	added := owner.post(tab+"/credentials", url.Values{"provider": {"openai"}, "name": {"Local"}, "base_url": {"http://127.0.0.1:1/v1"},
		"api_key": {"sk-very-secret-key-WXYZ"}})
	if added.Status != http.StatusSeeOther || !strings.Contains(added.location(), "done=credential-added") {
		t.Fatalf("add credential: %d %q\n%s", added.Status, added.location(), visibleText(added.Body))
	}
	page := owner.get(added.location()).expect(t, http.StatusOK, "The provider credential was added.", "Local", "…WXYZ")
	if strings.Contains(page.Body, "sk-very-secret") {
		t.Fatal("the page shows the provider key")
	}
	m := credentialLink.FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no remove form for the credential:\n%s", page.Body)
	}
	cred := m[1]

	// An alias routed to it; the credential stays while it is routed to.
	saved := owner.post(tab+"/aliases", url.Values{"alias": {"local"}, "credential_id": {cred}, "model": {"llama-3"}})
	if saved.Status != http.StatusSeeOther {
		t.Fatalf("save alias: %d\n%s", saved.Status, visibleText(saved.Body))
	}
	owner.get(saved.location()).expect(t, http.StatusOK, "The alias was saved.", "llama-3 via Local")
	owner.post(tab+"/credentials/"+cred+"/remove", nil).expect(t, http.StatusConflict, "alias")
	if a := owner.post(tab+"/aliases/local/delete", nil); a.Status != http.StatusSeeOther {
		t.Fatalf("remove alias: %d", a.Status)
	}
	removed := owner.post(tab+"/credentials/"+cred+"/remove", nil)
	if removed.Status != http.StatusSeeOther {
		t.Fatalf("remove credential: %d\n%s", removed.Status, visibleText(removed.Body))
	}
	owner.get(removed.location()).expect(t, http.StatusOK, "The provider credential was removed.", "This account has no provider credentials.")

	// The budget and the month's usage (the three echo answers above).
	owner.post(tab+"/budget", url.Values{"monthly_tokens": {"lots"}}).expect(t, http.StatusUnprocessableEntity, "Please correct the fields marked below.")
	set := owner.post(tab+"/budget", url.Values{"monthly_tokens": {"100000"}})
	if set.Status != http.StatusSeeOther {
		t.Fatalf("set budget: %d\n%s", set.Status, visibleText(set.Body))
	}
	testutil.Eventually(t, 10*time.Second, "the usage of the echo answers", func() bool {
		return strings.Contains(visibleText(owner.get(tab).Body), "of a budget of 100000 tokens")
	})
	owner.get(tab).expect(t, http.StatusOK, "of a budget of 100000 tokens", "Requests")
}

var (
	deltaContent   = regexp.MustCompile(`"delta":\{[^}]*"content":"([^"]*)"`)
	credentialLink = regexp.MustCompile(`/models/credentials/([0-9a-f-]{36})/remove`)
)
