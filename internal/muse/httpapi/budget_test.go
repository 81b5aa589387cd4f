package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestBudgetUnderConcurrency sends 100 completions at once against a
// budget with room for about 10: each is admitted against the metered
// total plus what the requests in flight were admitted for, so about 10
// pass and the overshoot is at most what the admitted ones produced;
// every admitted one is metered, the month's total is the sum of its
// rows, and once the total reaches the budget everything is refused.
func TestBudgetUnderConcurrency(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		e := newEnv(t, engine)
		body := chatBody("echo", "")
		// One echo completion's tokens, measured.
		e.c.Do("POST", "/v1/chat/completions", body, http.StatusOK, openapitest.Bearer(keyInvoke), org(account))
		one := e.usage(t)[0]
		per := one.Prompt + one.Completion
		e.c.Do("PUT", "/v1/accounts/"+account+"/budget", `{"monthly_tokens":`+itoa(per*11)+`}`, http.StatusOK, openapitest.Bearer(e.owner))

		const n = 100
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
				r.Header.Set("Authorization", "Bearer "+keyInvoke)
				r.Header.Set(muse.OrganizationHeader, account)
				w := httptest.NewRecorder()
				e.h.ServeHTTP(w, r)
				codes[i] = w.Code
			}()
		}
		wg.Wait()
		admitted := 0
		for _, c := range codes {
			switch c {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("status %d", c)
			}
		}
		rows := e.usage(t)
		var sum int64
		for _, r := range rows {
			sum += r.Prompt + r.Completion
		}
		var b muse.Budget
		if err := e.db.QueryRow(t.Context(), `SELECT CAST(sum(tokens) AS bigint) FROM usage_months`).Scan(&b.Used); err != nil {
			t.Fatal(err)
		}
		if len(rows) != admitted+1 || b.Used != sum {
			t.Fatalf("%d admitted, %d rows, month total %d, rows' sum %d", admitted, len(rows), b.Used, sum)
		}
		if admitted < 1 || admitted > 30 || b.Used > per*11+int64(admitted)*per {
			t.Fatalf("admitted %d, used %d of %d", admitted, b.Used, per*11)
		}
		e.c.Code("POST", "/v1/chat/completions", body, http.StatusTooManyRequests, "budget_exhausted", openapitest.Bearer(keyInvoke), org(account))
		t.Logf("%s: %d of %d admitted; %d tokens used of a %d budget", engine, admitted, n, b.Used, per*11)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
