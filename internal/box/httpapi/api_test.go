package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func keys(m map[string]any) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestGrantValidation(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	cases := []struct {
		name, body string
		status     int
		code       string
		message    string
	}{
		{"empty object", `{}`, 422, "unprocessable", "account_id is required"},
		{"malformed account", `{"account_id":"acct-1"}`, 422, "unprocessable", "account_id must be a UUID"},
		{"uuid without dashes", `{"account_id":"aaaaaaaaaaaa4aaa8aaaaaaaaaaaaaaa"}`, 422, "unprocessable", "account_id must be a UUID"},
		{"unknown product", `{"account_id":"` + account + `","product":"gold"}`, 422, "unprocessable",
			"product must be one of kit, platform, identity, courier"},
		{"two problems", `{"account_id":"x","product":"Platform"}`, 422, "unprocessable",
			"account_id must be a UUID, product must be one of kit, platform, identity, courier"},
		{"bad range", `{"account_id":"` + account + `","version_range":"<2.0.0"}`, 422, "unprocessable",
			"version_range operator < is not supported; want ^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z"},
		{"range union", `{"account_id":"` + account + `","version_range":"^1.0.0 || ^2.0.0"}`, 422, "unprocessable", ""},
		{"long reference", `{"account_id":"` + account + `","reference":"` + strings.Repeat("r", 256) + `"}`, 422, "unprocessable",
			"reference must be at most 255 characters"},
		{"NUL in source", `{"account_id":"` + account + `","source":"a\u0000b"}`, 422, "unprocessable",
			"source must not contain control, bidi-control, zero-width or other invisible characters"},
		{"bidi override in reference", `{"account_id":"` + account + `","reference":"pay_\u202e1"}`, 422, "unprocessable",
			"reference must not contain control, bidi-control, zero-width or other invisible characters"},
		{"zero-width space in source", `{"account_id":"` + account + `","source":"reconciled\u200b_payment"}`, 422, "unprocessable",
			"source must not contain control, bidi-control, zero-width or other invisible characters"},
		{"Hangul filler in source", `{"account_id":"` + account + `","source":"reconciled\u3164payment"}`, 422, "unprocessable",
			"source must not contain control, bidi-control, zero-width or other invisible characters"},
		{"variation selector in reference", `{"account_id":"` + account + `","reference":"pay_1\ufe0f"}`, 422, "unprocessable",
			"reference must not contain control, bidi-control, zero-width or other invisible characters"},
		{"key in another case", `{"account_id":"` + account + `","product":"identity","PRODUCT":"courier"}`, 400, "malformed_json", `unknown field "PRODUCT"`},
		{"duplicate key", `{"account_id":"` + account + `","product":"identity","product":"courier"}`, 400, "malformed_json", `duplicate field "product"`},
		{"unknown field", `{"account_id":"` + account + `","expires_at":"2030-01-01"}`, 400, "malformed_json", `unknown field "expires_at"`},
		{"wrong type", `{"account_id":42}`, 400, "malformed_json", `field "account_id" must be of type string`},
		{"not json", `account_id=1`, 400, "malformed_json", ""},
		{"two objects", `{} {}`, 400, "malformed_json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.do("POST", "/v1/operator/entitlements", staffToken, c.body)
			if res.status != c.status || res.errorCode() != c.code {
				t.Fatalf("%d %q, want %d %q (%s)", res.status, res.errorCode(), c.status, c.code, res.raw)
			}
			if c.message != "" && res.errorMessage() != c.message {
				t.Errorf("message %q, want %q", res.errorMessage(), c.message)
			}
			// A validation failure names its fields; a body that is not
			// the request's shape has none to name.
			want := "code,message"
			if c.status == 422 {
				want = "code,fields,message"
			}
			if keys(res.body) != "error" || keys(res.object("error")) != want {
				t.Errorf("envelope %s, want {error:{%s}}", res.raw, want)
			}
		})
	}
	req := httptest.NewRequest("POST", "/v1/operator/entitlements", strings.NewReader(`{"account_id":"`+account+`"}`))
	req.Header.Set("Authorization", "Bearer "+staffToken)
	req.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	if rec.Code != 415 || !strings.Contains(rec.Body.String(), "unsupported_media_type") {
		t.Errorf("text/plain body: %d %s", rec.Code, rec.Body)
	}
	if n := e.written(); n != 0 {
		t.Errorf("invalid grants wrote %d rows", n)
	}
}

// TestGrantBlanksAndDefaults: blanks are stored as null, product defaults to
// kit, the account id is stored lower-case.
func TestGrantBlanksAndDefaults(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		res := e.do("POST", "/v1/operator/entitlements", staffToken,
			`{"account_id":" `+strings.ToUpper(account)+` ","product":"  ","version_range":" ","source":"","reference":"\t"}`)
		if res.status != 201 {
			t.Fatalf("grant: %d %s", res.status, res.raw)
		}
		ent := res.object("entitlement")
		if keys(ent) != "account_id,granted_at,granted_by,id,max_installations,product,reference,revoked_at,revoked_by,source,status,version_range" {
			t.Errorf("entitlement fields: %s", keys(ent))
		}
		want := map[string]any{"account_id": account, "product": "kit", "status": "active", "version_range": nil,
			"source": nil, "reference": nil, "granted_by": staffID, "revoked_by": nil, "revoked_at": nil, "max_installations": nil}
		for k, v := range want {
			if ent[k] != v {
				t.Errorf("%s = %v, want %v", k, ent[k], v)
			}
		}
		if got := e.count(`SELECT count(*) FROM entitlements WHERE version_range IS NULL AND source IS NULL AND reference IS NULL`); got != 1 {
			t.Errorf("rows with null blanks = %d, want 1", got)
		}
		res = e.do("POST", "/v1/operator/entitlements", staffToken,
			`{"account_id":"`+account+`","product":"courier","version_range":" ~1.2.3 ","source":"reconciled_payment","reference":" pi_3Nx "}`)
		ent = res.object("entitlement")
		if res.status != 201 || ent["version_range"] != "~1.2.3" || ent["source"] != "reconciled_payment" || ent["reference"] != "pi_3Nx" {
			t.Errorf("grant with values: %d %s", res.status, res.raw)
		}
	})
}

// TestConcurrentGrantsOverHTTP: 50 concurrent grants of one (account,
// product) give one 201, 49 409s carrying that row, and one event.
func TestConcurrentGrantsOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		const n = 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		ids := map[string]bool{}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := e.do("POST", "/v1/operator/entitlements", staffToken, `{"account_id":"`+account+`","product":"platform"}`)
				mu.Lock()
				defer mu.Unlock()
				statuses[res.status]++
				ids[idPath(res.object("entitlement"))] = true
				if res.status == 409 && (keys(res.body) != "duplicate,entitlement" || res.body["duplicate"] != true) {
					t.Errorf("409 body %s, want {entitlement, duplicate: true}", res.raw)
				}
			}()
		}
		wg.Wait()
		if statuses[201] != 1 || statuses[409] != n-1 {
			t.Errorf("statuses %v, want one 201 and %d 409s", statuses, n-1)
		}
		if len(ids) != 1 {
			t.Errorf("responses named %d different rows, want 1", len(ids))
		}
		if got := e.count(`SELECT count(*) FROM entitlement_events`); got != 1 {
			t.Errorf("events = %d, want 1", got)
		}
		if got := e.count(`SELECT count(*) FROM entitlements`); got != 1 {
			t.Errorf("rows = %d, want 1", got)
		}
	})
}

func TestRevoke(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		row := e.grant(account, "identity", "")
		path := "/v1/operator/entitlements/" + idPath(row) + "/revoke"
		first := e.do("POST", path, staffToken, "")
		ent := first.object("entitlement")
		if first.status != 200 || ent["status"] != "revoked" || ent["revoked_by"] != staffID || ent["revoked_at"] == nil {
			t.Fatalf("revoke: %d %s", first.status, first.raw)
		}
		second := e.do("POST", path, staffToken, "")
		if second.status != 200 || second.raw != first.raw {
			t.Errorf("second revoke: %d %s, want the row unchanged %s", second.status, second.raw, first.raw)
		}
		if got := e.count(`SELECT count(*) FROM entitlement_events WHERE action = 'revoke'`); got != 1 {
			t.Errorf("revoke events = %d, want 1", got)
		}
		for _, id := range []string{"999999", "abc", "0", "-1", "1.0", "99999999999999999999", "1e3"} {
			if res := e.do("POST", "/v1/operator/entitlements/"+id+"/revoke", staffToken, ""); res.status != 404 || res.errorCode() != "not_found" || res.errorMessage() != "not found" {
				t.Errorf("revoke %s: %d %s", id, res.status, res.raw)
			}
		}
		// Re-grant after revoke: a new row, the old one stays revoked.
		again := e.grant(account, "identity", "")
		if idPath(again) == idPath(row) {
			t.Errorf("re-grant reused id %s", idPath(row))
		}
		if got := e.count(`SELECT count(*) FROM entitlements WHERE status = 'revoked'`); got != 1 {
			t.Errorf("revoked rows = %d, want 1", got)
		}
	})
}

func TestListEntitlements(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	for _, p := range []string{"kit", "platform", "identity", "courier"} {
		e.grant(account, p, "")
	}
	e.grant(otherAcct, "kit", "")
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		res := e.do("GET", "/v1/operator/entitlements?limit=2&cursor="+cursor, staffToken, "")
		if res.status != 200 {
			t.Fatalf("list: %d %s", res.status, res.raw)
		}
		for _, row := range res.list("entitlements") {
			got = append(got, row["product"].(string)+"@"+row["account_id"].(string)[:4])
		}
		next, _ := res.body["next_cursor"].(string)
		if next == "" {
			if _, present := res.body["next_cursor"]; !present {
				t.Error("next_cursor missing on the last page, want null")
			}
			break
		}
		cursor = next
	}
	want := "kit@bbbb courier@aaaa identity@aaaa platform@aaaa kit@aaaa"
	if strings.Join(got, " ") != want {
		t.Errorf("pages = %q, want %q (newest first)", strings.Join(got, " "), want)
	}
	res := e.do("GET", "/v1/operator/entitlements?account_id="+otherAcct, staffToken, "")
	if rows := res.list("entitlements"); len(rows) != 1 || rows[0]["account_id"] != otherAcct {
		t.Errorf("account filter: %s", res.raw)
	}
	res = e.do("GET", "/v1/operator/entitlements?product=kit&status=active", staffToken, "")
	if rows := res.list("entitlements"); len(rows) != 2 {
		t.Errorf("product+status filter: %s", res.raw)
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "cursor=zzz", "status=expired", "product=gold", "account_id=x"} {
		if res := e.do("GET", "/v1/operator/entitlements?"+q, staffToken, ""); res.status != 422 {
			t.Errorf("?%s: %d %s, want 422", q, res.status, res.raw)
		}
	}
}

// TestCustomerRead: kit and active only, exactly the seven fields.
func TestCustomerRead(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "platform", "^1.0.0")
		kit := e.grant(account, "kit", "")
		e.do("POST", "/v1/operator/entitlements/"+idPath(kit)+"/revoke", staffToken, "")
		e.grant(account, "kit", "")
		e.grant(otherAcct, "kit", "")
		res := e.do("GET", "/v1/accounts/"+account+"/entitlements", buyerToken, "")
		rows := res.list("entitlements")
		if res.status != 200 || len(rows) != 1 {
			t.Fatalf("customer read: %d %s", res.status, res.raw)
		}
		if keys(rows[0]) != "account_id,granted_at,product,reference,revoked_at,source,status" {
			t.Errorf("fields %s, want exactly the seven", keys(rows[0]))
		}
		if rows[0]["product"] != "kit" || rows[0]["status"] != "active" || rows[0]["account_id"] != account {
			t.Errorf("row %v", rows[0])
		}
	})
}

// TestHoldings: every active entitlement of the account, paid units
// included, with its range and nothing about money; revoked rows and other
// accounts' rows are absent.
func TestHoldings(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		if res := e.do("GET", "/v1/accounts/"+account+"/holdings", buyerToken, ""); res.status != 200 || len(res.list("holdings")) != 0 {
			t.Fatalf("holdings of an empty account: %d %s", res.status, res.raw)
		}
		e.do("POST", "/v1/operator/entitlements", staffToken, `{"account_id":"`+account+`","product":"platform","version_range":"^1.2.0","source":"reconciled_payment","reference":"pi_9"}`)
		courier := e.grant(account, "courier", "")
		e.do("POST", "/v1/operator/entitlements/"+idPath(courier)+"/revoke", staffToken, "")
		e.grant(account, "kit", "")
		e.grant(otherAcct, "identity", "")
		res := e.do("GET", "/v1/accounts/"+account+"/holdings", buyerToken, "")
		rows := res.list("holdings")
		if res.status != 200 || len(rows) != 2 {
			t.Fatalf("holdings: %d %s; want platform and kit", res.status, res.raw)
		}
		for i, want := range []struct {
			product string
			rng     any
		}{{"platform", "^1.2.0"}, {"kit", nil}} {
			if got := keys(rows[i]); got != "granted_at,product,version_range" {
				t.Errorf("holding %d fields %s, want exactly three", i, got)
			}
			if rows[i]["product"] != want.product || rows[i]["version_range"] != want.rng {
				t.Errorf("holding %d = %v, want %s %v", i, rows[i], want.product, want.rng)
			}
		}
		if res := e.do("GET", "/v1/accounts/"+account+"/holdings", strangerTok, ""); res.status != 404 {
			t.Errorf("a stranger's read: %d, want 404", res.status)
		}
	})
}

func TestArtifactFetchAndRedeem(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		fetch := func(body string) response {
			return e.do("POST", "/v1/accounts/"+account+"/artifact_fetches", buyerToken, body)
		}
		res := fetch(`{"artifact":"platform","version_range":"^1.0.0"}`)
		if res.status != 403 || res.errorCode() != "entitlement_required" {
			t.Fatalf("no entitlement: %d %s", res.status, res.raw)
		}
		row := e.grant(account, "platform", "^1.2.0")

		res = fetch(`{"artifact":"platform","version_range":"^2.0.0"}`)
		if res.status != 403 || res.errorCode() != "version_not_granted" ||
			!strings.Contains(res.errorMessage(), `"^2.0.0"`) || !strings.Contains(res.errorMessage(), `"^1.2.0"`) {
			t.Errorf("outside the range: %d %s", res.status, res.raw)
		}
		res = fetch(`{"artifact":"platform"}`)
		if res.status != 403 || res.errorCode() != "version_not_granted" || !strings.Contains(res.errorMessage(), "every version") {
			t.Errorf("every version under ^1.2.0: %d %s", res.status, res.raw)
		}
		res = fetch(`{"artifact":"platform","version_range":"^1.1.0"}`)
		if res.status != 403 || res.errorCode() != "version_not_granted" {
			t.Errorf("^1.1.0 under ^1.2.0: %d %s", res.status, res.raw)
		}
		for _, body := range []string{`{"artifact":"gold"}`, `{}`, `{"artifact":"platform","version_range":"1.2"}`} {
			if res := fetch(body); res.status != 422 || res.errorCode() != "unprocessable" {
				t.Errorf("%s: %d %s", body, res.status, res.raw)
			}
		}
		if n := e.count(`SELECT count(*) FROM capabilities`); n != 0 {
			t.Fatalf("refused checks stored %d capabilities", n)
		}

		res = fetch(`{"artifact":"platform","version_range":"~1.3.0"}`)
		capability := res.object("capability")
		token, _ := capability["token"].(string)
		if res.status != 201 || token == "" || capability["account_id"] != account || capability["artifact"] != "platform" ||
			capability["version_range"] != "~1.3.0" || capability["expires_at"] == nil || keys(capability) != "account_id,artifact,expires_at,token,version_range" {
			t.Fatalf("capability: %d %s", res.status, res.raw)
		}
		if res.header.Get("Cache-Control") != "no-store" {
			t.Errorf("capability response is cacheable")
		}
		if n := e.count(`SELECT count(*) FROM capabilities WHERE token_digest = $1`, token); n != 0 {
			t.Error("the token is stored in the clear")
		}
		if strings.Contains(e.logs.String(), token) {
			t.Error("the token was logged")
		}

		// Redeem is public: the token is the credential.
		red := e.do("POST", "/v1/capabilities/redeem", "", `{"token":"`+token+`"}`)
		if red.status != 200 || red.raw != `{"account_id":"`+account+`","artifact":"platform","version_range":"~1.3.0"}`+"\n" {
			t.Errorf("redeem: %d %s", red.status, red.raw)
		}
		red = e.do("POST", "/v1/capabilities/redeem", "", `{"token":"`+token+`"}`)
		if red.status != 410 || red.errorCode() != "capability_used" {
			t.Errorf("second redeem: %d %s", red.status, red.raw)
		}
		if red := e.do("POST", "/v1/capabilities/redeem", "", `{"token":"boxcap_unknown"}`); red.status != 404 || red.errorCode() != "not_found" {
			t.Errorf("unknown token: %d %s", red.status, red.raw)
		}
		if red := e.do("POST", "/v1/capabilities/redeem", "", `{}`); red.status != 422 {
			t.Errorf("no token: %d %s", red.status, red.raw)
		}

		// Revoking voids what is outstanding.
		res = fetch(`{"artifact":"platform","version_range":"1.2.5"}`)
		pending := res.object("capability")["token"].(string)
		e.do("POST", "/v1/operator/entitlements/"+idPath(row)+"/revoke", staffToken, "")
		if red := e.do("POST", "/v1/capabilities/redeem", "", `{"token":"`+pending+`"}`); red.status != 410 || red.errorCode() != "capability_expired" {
			t.Errorf("redeem after revoke: %d %s", red.status, red.raw)
		}
		if res := fetch(`{"artifact":"platform","version_range":"1.2.5"}`); res.status != 403 || res.errorCode() != "entitlement_required" {
			t.Errorf("fetch after revoke: %d %s", res.status, res.raw)
		}
	})
}

// TestConcurrentRedemptionsOverHTTP: exactly one of many concurrent
// redemptions of one token succeeds.
func TestConcurrentRedemptionsOverHTTP(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		e.grant(account, "kit", "")
		token := e.do("POST", "/v1/accounts/"+account+"/artifact_fetches", buyerToken, `{"artifact":"kit"}`).object("capability")["token"].(string)
		const n = 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[int]int{}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := e.do("POST", "/v1/capabilities/redeem", "", `{"token":"`+token+`"}`)
				mu.Lock()
				statuses[res.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if statuses[200] != 1 || statuses[410] != n-1 {
			t.Errorf("statuses %v, want one 200 and %d 410s", statuses, n-1)
		}
	})
}

func TestReleasesApprovalsClaimsTimeline(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		publish := func(product, version string) map[string]any {
			res := e.do("POST", "/v1/operator/releases", staffToken, `{"product":"`+product+`","version":"`+version+`","notes":"line one\nline two"}`)
			if res.status != 201 {
				t.Fatalf("publish %s %s: %d %s", product, version, res.status, res.raw)
			}
			return res.object("release")
		}
		r100 := publish("platform", "1.0.0")
		r110 := publish("platform", "1.1.0")
		r200 := publish("platform", "2.0.0")
		publish("courier", "1.0.0")
		if res := e.do("POST", "/v1/operator/releases", staffToken, `{"product":"platform","version":"1.0.0"}`); res.status != 409 || res.errorCode() != "conflict" {
			t.Errorf("duplicate release: %d %s", res.status, res.raw)
		}
		for _, body := range []string{`{"product":"platform","version":"v1.0.0"}`, `{"product":"gold","version":"1.0.0"}`, `{"product":"kit"}`} {
			if res := e.do("POST", "/v1/operator/releases", staffToken, body); res.status != 422 {
				t.Errorf("%s: %d %s", body, res.status, res.raw)
			}
		}
		res := e.do("GET", "/v1/operator/releases?product=platform", staffToken, "")
		if rels := res.list("releases"); len(rels) != 3 || rels[0]["version"] != "2.0.0" {
			t.Errorf("operator releases: %s", res.raw)
		}

		accountReleases := func() []string {
			res := e.do("GET", "/v1/accounts/"+account+"/releases", buyerToken, "")
			if res.status != 200 {
				t.Fatalf("account releases: %d %s", res.status, res.raw)
			}
			var out []string
			for _, r := range res.list("releases") {
				out = append(out, r["product"].(string)+"@"+r["version"].(string))
			}
			return out
		}
		if got := accountReleases(); len(got) != 0 {
			t.Errorf("releases without entitlements: %v", got)
		}
		e.grant(account, "platform", "~1.1.0")
		if got := fmt.Sprint(accountReleases()); got != "[platform@1.1.0]" {
			t.Errorf("releases under ~1.1.0: %v", got)
		}

		approve := func(rel map[string]any) response {
			return e.do("POST", "/v1/accounts/"+account+"/approvals", buyerToken, `{"release_id":`+idPath(rel)+`}`)
		}
		if res := approve(r200); res.status != 403 || res.errorCode() != "version_not_granted" {
			t.Errorf("approve 2.0.0: %d %s", res.status, res.raw)
		}
		if res := approve(r100); res.status != 403 || res.errorCode() != "version_not_granted" {
			t.Errorf("approve 1.0.0 under ~1.1.0: %d %s", res.status, res.raw)
		}
		if res := e.do("POST", "/v1/accounts/"+account+"/approvals", buyerToken, `{"release_id":987654}`); res.status != 422 {
			t.Errorf("approve unknown release: %d %s", res.status, res.raw)
		}
		res = approve(r110)
		approval := res.object("approval")
		if res.status != 201 || keys(approval) != "account_id,approved_by,created_at,id,product,release_id,version" ||
			approval["approved_by"] != buyerID || approval["version"] != "1.1.0" || approval["account_id"] != account {
			t.Fatalf("approve 1.1.0: %d %s", res.status, res.raw)
		}
		if again := approve(r110); again.status != 200 || idPath(again.object("approval")) != idPath(approval) {
			t.Errorf("approve again: %d %s", again.status, again.raw)
		}

		claim := e.do("POST", "/v1/accounts/"+account+"/claims", buyerToken, "")
		if claim.status != 201 || claim.object("claim")["claimed_by"] != buyerID || claim.object("entitlement")["source"] != "claim" ||
			keys(claim.object("entitlement")) != "account_id,granted_at,product,reference,revoked_at,source,status" {
			t.Fatalf("claim: %d %s", claim.status, claim.raw)
		}
		if again := e.do("POST", "/v1/accounts/"+account+"/claims", buyerToken, ""); again.status != 200 || again.body["claim"] != nil {
			t.Errorf("second claim: %d %s", again.status, again.raw)
		}
		if got := e.count(`SELECT count(*) FROM entitlements WHERE product = 'kit' AND granted_by = $1`, buyerID); got != 1 {
			t.Errorf("kit rows granted by the claimant = %d, want 1", got)
		}

		res = e.do("GET", "/v1/accounts/"+account+"/audit-events", buyerToken, "")
		events := res.list("events")
		if res.status != 200 || len(events) != 4 || res.body["next_cursor"] != nil {
			t.Fatalf("timeline: %d %s", res.status, res.raw)
		}
		if bad := e.do("GET", "/v1/accounts/"+account+"/audit-events?cursor=bm90LW91cnM", buyerToken, ""); bad.status != 422 || !strings.Contains(bad.raw, `"cursor"`) {
			t.Errorf("timeline with a cursor not given: %d %s, want 422 naming cursor", bad.status, bad.raw)
		}
		if events[0]["type"] != "approval.created" || events[0]["actor_user_id"] != buyerID ||
			idPath(events[0]) == "" || events[0]["approval_id"] == nil || events[0]["release_id"] == nil {
			t.Errorf("newest item: %v", events[0])
		}
		for _, ev := range events[1:] {
			if ev["type"] != "release.published" || ev["product"] != "platform" || ev["actor_user_id"] != staffID {
				t.Errorf("item %v, want a platform release", ev)
			}
			if _, has := ev["approval_id"]; has {
				t.Errorf("release item carries approval_id: %v", ev)
			}
		}
		if e.count(`SELECT count(*) FROM entitlement_events`) == 0 {
			t.Fatal("no entitlement events were written")
		}
		if strings.Contains(res.raw, `"grant"`) || strings.Contains(res.raw, `"revoke"`) {
			t.Errorf("the timeline contains entitlement events: %s", res.raw)
		}
		if res := e.do("GET", "/v1/accounts/"+account+"/audit-events", strangerTok, ""); res.status != 404 {
			t.Errorf("stranger's timeline: %d", res.status)
		}
	})
}

func TestUnknownRoutes(t *testing.T) {
	e := newEnv(t, "sqlite", envOptions{})
	if res := e.do("GET", "/v1/nothing", staffToken, ""); res.status != 404 || res.errorCode() != "not_found" {
		t.Errorf("unknown path: %d %s", res.status, res.raw)
	}
	res := e.do("DELETE", "/v1/operator/entitlements", staffToken, "")
	if res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") == "" {
		t.Errorf("wrong method: %d %s allow %q", res.status, res.raw, res.header.Get("Allow"))
	}
}

// TestFreeTextIsStoredInNFC: a decomposed accent is stored precomposed,
// and release notes keep their line breaks but refuse a bidi override.
func TestFreeTextIsStoredInNFC(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine, envOptions{})
		res := e.do("POST", "/v1/operator/entitlements", staffToken, `{"account_id":"`+account+`","product":"kit","reference":"Cafe\u0301"}`)
		if res.status != http.StatusCreated || res.object("entitlement")["reference"] != "Caf\u00e9" {
			t.Fatalf("grant = %d %s, want 201 with reference in NFC", res.status, res.raw)
		}
		if n := e.count(`SELECT count(*) FROM entitlements WHERE reference = $1`, "Caf\u00e9"); n != 1 {
			t.Errorf("rows with the NFC reference = %d, want 1", n)
		}
		if res := e.do("POST", "/v1/operator/releases", staffToken, `{"product":"kit","version":"1.0.0","notes":"line one\nline two"}`); res.status != http.StatusCreated {
			t.Errorf("notes with a line break: %d %s, want 201", res.status, res.raw)
		}
		if res := e.do("POST", "/v1/operator/releases", staffToken, `{"product":"kit","version":"1.0.2","notes":"ship it \u2764\ufe0f"}`); res.status != http.StatusCreated {
			t.Errorf("notes with an emoji's presentation selector: %d %s, want 201", res.status, res.raw)
		}
		res = e.do("POST", "/v1/operator/releases", staffToken, `{"product":"kit","version":"1.0.1","notes":"fixed \u2066evil\u2069"}`)
		if res.status != http.StatusUnprocessableEntity || res.errorMessage() != "notes must not contain control, bidi-control, zero-width or other invisible characters" {
			t.Errorf("notes with a bidi isolate: %d %s, want 422 naming notes", res.status, res.raw)
		}
	})
}
