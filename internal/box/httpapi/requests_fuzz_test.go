package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
)

// FuzzRequests sends arbitrary bodies, path ids and query values to every
// box route that reads one, as staff and as a member: whatever arrives, the
// answer is never a 500 and never a panic, an error is box's JSON
// envelope, and the exchange agrees with the OpenAPI document.
func FuzzRequests(f *testing.F) {
	e := newEnv(f, sqldb.SQLite, envOptions{})
	e.grant(account, "platform", "^1.0.0")
	routes := []struct {
		method, path, token string
	}{
		{"POST", "/v1/operator/entitlements", staffToken},
		{"POST", "/v1/operator/entitlements/{p}/revoke", staffToken},
		{"GET", "/v1/operator/entitlements?account_id={p}&product={p}&status={p}&cursor={p}&limit={p}", staffToken},
		{"POST", "/v1/operator/releases", staffToken},
		{"GET", "/v1/operator/releases?product={p}", staffToken},
		{"POST", "/v1/accounts/" + account + "/artifact_fetches", buyerToken},
		{"POST", "/v1/accounts/" + account + "/approvals", buyerToken},
		{"POST", "/v1/accounts/" + account + "/claims", buyerToken},
		{"GET", "/v1/accounts/{p}/entitlements", buyerToken},
		{"POST", "/v1/capabilities/redeem", ""},
	}
	seeds := []struct{ body, param string }{
		{`{"account_id":"` + account + `","product":"courier","version_range":"^2.0.0"}`, "1"},
		{`{"account_id":"not-a-uuid","product":"kit"}`, "0"},
		{`{"product":"platform","version":"1.2.3","notes":"x"}`, "-1"},
		{`{"artifact":"platform","version_range":">=1.0.0"}`, "9223372036854775808"},
		{`{"artifact":"platform","version_range":"^1.2.3 || <2"}`, "%"},
		{`{"release_id":"x"}`, "' OR 1=1 --"},
		{`{"release_id":99999999999999999999}`, "%_\\"},
		{`{"token":""}`, ""},
		{`{"token":null}`, "\x00"},
		{`{"version_range":"~0.0.0-"}`, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"},
		{`{"account_id":["a"]}`, "2"},
		{`not json`, "1e3"},
		{`{}{}`, "200"},
		{`{"a":` + strings.Repeat("[", 5000) + `}`, "201"},
	}
	for i, s := range seeds {
		f.Add(uint8(i), s.body, s.param)
	}
	f.Fuzz(func(t *testing.T, route uint8, body, param string) {
		rt := routes[int(route)%len(routes)]
		target := strings.ReplaceAll(rt.path, "{p}", url.PathEscape(param))
		if strings.Contains(rt.path, "?") {
			target = strings.ReplaceAll(rt.path, "{p}", url.QueryEscape(param))
		}
		r := httptest.NewRequest(rt.method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if rt.token != "" {
			r.Header.Set("Authorization", "Bearer "+rt.token)
		}
		// The document is an oracle too: an accepted request it refuses, or
		// an answer it does not declare, fails the input. A path not in
		// clean form (an empty id makes "//") is redirected by ServeMux
		// before box sees it, which the document does not describe.
		h := e.handler
		if path.Clean(r.URL.Path) == r.URL.Path {
			h = openapitest.Wrap(t, httpapi.OpenAPI(), h)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", rt.method, target, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var env struct {
				Error     struct{ Code, Message string } `json:"error"`
				Duplicate bool                           `json:"duplicate"`
			}
			err := json.Unmarshal(w.Body.Bytes(), &env)
			// A duplicate grant is the one 4xx without the envelope.
			if err == nil && w.Code == 409 && env.Duplicate {
				return
			}
			if err != nil || env.Error.Code == "" {
				t.Fatalf("%s %s: error body is not box's envelope: %q", rt.method, target, w.Body)
			}
		}
	})
}
