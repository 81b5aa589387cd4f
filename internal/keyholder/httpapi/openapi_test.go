package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/keyholder/httpapi"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
)

// TestOpenAPITraffic validates the /v1 exchanges and probes of a real run
// against the document, so the document cannot drift from the code.
func TestOpenAPITraffic(t *testing.T) {
	if _, err := openapitest.Load(httpapi.OpenAPI()); err != nil {
		t.Fatalf("the document: %v", err)
	}
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{})
	client := &http.Client{Transport: openapitest.Transport(t, httpapi.OpenAPI(), http.DefaultTransport)}
	c, cred := p.Entitled("doc@example.com", "kit", "")
	capability := p.Capability(c, "kit", "")
	p.PushFiles("kit", "1.0.0", map[string][]byte{"kit.tar.gz": []byte("kit")})
	dl := "/v1/accounts/" + c.AccountID + "/downloads/kit/1.0.0"
	for _, r := range []struct {
		method, path, body, user, pass, token string
	}{
		{"GET", "/healthz", "", "", "", ""},
		{"GET", "/readyz", "", "", "", ""},
		{"POST", "/v1/exchange", `{"capability":"` + capability + `"}`, "", "", ""},
		{"POST", "/v1/exchange", `{"capability":"` + capability + `"}`, "", "", ""},
		{"POST", "/v1/exchange", `{}`, "", "", ""},
		{"GET", "/v1/accounts/" + c.AccountID + "/pulls", "", "", "", c.Token},
		{"GET", "/v1/accounts/" + c.AccountID + "/pulls", "", "", "", ""},
		{"GET", "/v1/operator/accounts/" + c.AccountID + "/pulls", "", "", "", p.StaffToken},
		{"GET", "/v1/operator/accounts/" + c.AccountID + "/pulls", "", "", "", c.Token},
		{"GET", "/v1/operator/accounts/" + c.AccountID + "/pulls", "", "", "", ""},
		{"GET", "/v1/operator/accounts/not-a-uuid/pulls", "", "", "", p.StaffToken},
		{"GET", "/v1/accounts/" + c.AccountID + "/pulls?cursor=not-ours", "", "", "", c.Token},
		{"DELETE", "/v1/credentials/" + cred.Username, "", cred.Username, "wrong", ""},
		{"DELETE", "/v1/credentials/" + cred.Username, "", cred.Username, cred.Password, ""},
		{"GET", dl, "", "", "", c.Token},
		{"GET", dl, "", "", "", ""},
		{"GET", dl + "/files/kit.tar.gz", "", "", "", c.Token},
		{"GET", dl + "/files/other.tar.gz", "", "", "", c.Token},
		{"GET", "/v1/accounts/" + c.AccountID + "/downloads/kit/2.0.0", "", "", "", c.Token},
		{"GET", "/v1/accounts/" + c.AccountID + "/downloads/courier/1.0.0", "", "", "", c.Token},
		{"GET", "/v1/accounts/" + c.AccountID + "/pulls", "", "", "", c.Token},
		{"GET", "/v1/exchange", "", "", "", ""},
		{"GET", "/nowhere", "", "", "", ""},
	} {
		req, _ := http.NewRequest(r.method, p.KeyholderURL+r.path, nil)
		if r.body != "" {
			req, _ = http.NewRequest(r.method, p.KeyholderURL+r.path, stringsReader(r.body))
			req.Header.Set("Content-Type", "application/json")
		}
		if r.user != "" {
			req.SetBasicAuth(r.user, r.pass)
		}
		if r.token != "" {
			req.Header.Set("Authorization", "Bearer "+r.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		resp.Body.Close()
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
