package parlor_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/parlor"
)

// BenchmarkPages measures each page's server time with 8 clients at once,
// against the embedded stylesheet served by the same handler in the same
// run (the floor: no API call). It reports the 95th percentile per page;
// the target is p95 ≤ 50 ms.
//
//	go test -run '^$' -bench Pages -benchtime 400x ./internal/parlor/
func BenchmarkPages(b *testing.B) {
	st := startStack(b)
	base := startParlor(b, st.GatewayURL)
	email, cookie, team := benchSession(b, base)
	st.makeStaff(b, email) // the operator's pages too; a customer's pages read the same
	pages := []struct{ name, path string }{
		{"static", "/static/style.css"},
		{"signin", "/signin"},
		{"accounts", "/app"},
		{"account", "/app/accounts/" + team},
		{"entitlements", "/app/accounts/" + team + "/entitlements"},
		{"downloads", "/app/accounts/" + team + "/downloads"},
		{"activity", "/app/accounts/" + team + "/activity"},
		{"operator", "/operator"},
		{"operator-account", "/operator/accounts/" + team},
		{"operator-entitlements", "/operator/entitlements"},
	}
	const clients = 8
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			var (
				mu    sync.Mutex
				times []time.Duration
			)
			work := make(chan struct{})
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				wg.Go(func() {
					var mine []time.Duration
					for range work {
						req, _ := http.NewRequest("GET", base+pg.path, nil)
						req.AddCookie(&http.Cookie{Name: parlor.CookieName, Value: cookie})
						start := time.Now()
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							continue
						}
						_ = resp.Body.Close()
						mine = append(mine, time.Since(start))
						if resp.StatusCode != http.StatusOK {
							b.Errorf("%s: status %d", pg.path, resp.StatusCode)
						}
					}
					mu.Lock()
					times = append(times, mine...)
					mu.Unlock()
				})
			}
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			slices.Sort(times)
			if len(times) > 0 {
				p95 := times[(len(times)*95)/100]
				b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
			}
		})
	}
}

// benchSession signs a user up through parlor and makes a team: the
// user's email, the session cookie and the team's id.
func benchSession(b *testing.B, base string) (email, cookie, team string) {
	b.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values) *http.Response {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: parlor.CookieName, Value: cookie})
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	email = uniqueEmail("bench")
	resp := post("/signup", url.Values{"email": {email}, "password": {"correct horse battery"}})
	for _, c := range resp.Cookies() {
		if c.Name == parlor.CookieName {
			cookie = c.Value
		}
	}
	if cookie == "" {
		b.Fatalf("sign up: %d, no session", resp.StatusCode)
	}
	resp = post("/app/accounts", url.Values{"name": {"Bench " + uniqueEmail("x")[2:10]}})
	m := idInPath.FindStringSubmatch(resp.Header.Get("Location"))
	if m == nil {
		b.Fatalf("create team: %d", resp.StatusCode)
	}
	return email, cookie, m[1]
}
