//go:build e2e

package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// TestTraceCrossesServices sends one traceparent to the gateway and finds
// its trace id in the gateway's, box's and identity's request logs (box
// asks identity about membership), and in identity's problem bodies.
func TestTraceCrossesServices(t *testing.T) {
	idEnv := identityEnv(t, sqldb.SQLite)
	e2e.MustRun(t, idEnv, "identity", "migrate")
	identity := e2e.Start(t, idEnv, "identity", "serve")
	boxEnv := e2e.Env{"DATABASE_URL": sqltest.URL(t, sqldb.SQLite), "BOX_IDENTITY_URL": identity.URL, "BOX_MASTER_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}
	e2e.MustRun(t, boxEnv, "box", "migrate")
	box := e2e.Start(t, boxEnv, "box", "serve")
	gw := e2e.Start(t, e2e.Env{"IDENTITY_URL": identity.URL, "IDENTITY_ISSUER": "http://localhost:" + portOf(identity.URL), "BOX_URL": box.URL}, "gateway", "serve")

	register(t, gw.URL, "tracer@example.com", "tracer password")
	tok := login(t, gw.URL, "tracer@example.com", "tracer password")
	team := e2e.Client{Base: gw.URL, Token: tok}.Do(t, "POST", "/v1/accounts", map[string]string{"name": "Tracers"}).Expect(t, http.StatusCreated).JSON(t)["id"].(string)

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	do := func(path string) *http.Response {
		req, _ := http.NewRequest("GET", gw.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do("/v1/accounts/" + team + "/entitlements")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("entitlements through the gateway: %d", resp.StatusCode)
	}
	// Each service logs a request after answering it: wait for the lines.
	for name, p := range map[string]*e2e.Proc{"gateway": gw, "box": box, "identity": identity} {
		testutil.Eventually(t, 5*time.Second, name+" to log the caller's trace id", func() bool {
			return strings.Contains(p.Logs(), `"trace_id":"`+traceID+`"`)
		})
	}
	// identity's problem bodies carry the same trace id.
	resp = do("/v1/accounts/00000000-0000-4000-8000-000000000000")
	defer resp.Body.Close()
	var problem map[string]any
	decodeResp(t, resp, &problem)
	if problem["trace_id"] != traceID {
		t.Errorf("problem trace_id = %v, want %s", problem["trace_id"], traceID)
	}
}

func portOf(url string) string { return url[strings.LastIndexByte(url, ':')+1:] }
