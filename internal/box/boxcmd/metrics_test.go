package boxcmd

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/box/httpapi"
	"github.com/platformco/platform/internal/box/sqlstore"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/observe/observetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

const (
	metricsStaff   = "tok-staff"
	metricsBuyer   = "tok-buyer"
	metricsAccount = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
)

// directory answers box's identity calls for a staff member and the
// owner of metricsAccount, as identity's HTTP API does.
func directory(w http.ResponseWriter, r *http.Request) {
	write := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch auth := r.Header.Get("Authorization"); {
	case auth == "Bearer "+metricsStaff && r.URL.Path == "/v1/operator/me":
		write(200, map[string]any{"user": map[string]any{"id": "11111111-1111-4111-8111-111111111111", "email": "staff@example.com", "staff": true}})
	case auth == "Bearer "+metricsBuyer && r.URL.Path == "/v1/me":
		write(200, map[string]any{"id": "22222222-2222-4222-8222-222222222222", "email": "buyer@example.com", "display_name": "", "staff": false})
	case auth == "Bearer "+metricsBuyer && r.URL.Path == "/v1/accounts/"+metricsAccount:
		write(200, map[string]any{"id": metricsAccount, "name": "Team", "slug": "team", "personal": false, "role": "owner"})
	default:
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"about:blank","status":404}`)
	}
}

// Grants, revokes, capabilities issued and redeemed through box's
// handler are counted by outcome, never by account or token.
func TestBoxDomainMetricsThroughTheHandler(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		idp := httptest.NewServer(http.HandlerFunc(directory))
		defer idp.Close()
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		metrics := observe.New("box")
		observe.Statements(db, metrics, nil)
		identity := httpapi.NewIdentity(idp.URL, 5*time.Second, slog.New(slog.DiscardHandler))
		defer identity.Close()
		svc := box.NewService(countOperations(sqlstore.New(db), metrics), identity, time.Minute)
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler)}))
		defer srv.Close()

		call := func(token, path, body string, want int) map[string]any {
			t.Helper()
			req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != want {
				t.Fatalf("POST %s: status %d (%v), want %d", path, resp.StatusCode, out, want)
			}
			return out
		}
		grant := `{"account_id":"` + metricsAccount + `","product":"platform","version_range":"^1.0.0","source":"reconciled_payment","reference":"pi_1"}`
		out := call(metricsStaff, "/v1/operator/entitlements", grant, http.StatusCreated)
		call(metricsStaff, "/v1/operator/entitlements", grant, http.StatusConflict)
		fetch := `{"artifact":"platform","version_range":"^1.0.0"}`
		capability := call(metricsBuyer, "/v1/accounts/"+metricsAccount+"/artifact_fetches", fetch, http.StatusCreated)
		token, _ := capability["capability"].(map[string]any)["token"].(string)
		call("", "/v1/capabilities/redeem", `{"token":"`+token+`"}`, http.StatusOK)
		call("", "/v1/capabilities/redeem", `{"token":"`+token+`"}`, http.StatusGone)
		id := out["entitlement"].(map[string]any)["id"].(float64)
		call(metricsStaff, "/v1/operator/entitlements/"+strconv.FormatInt(int64(id), 10)+"/revoke", ``, http.StatusOK)
		call(metricsBuyer, "/v1/accounts/"+metricsAccount+"/artifact_fetches", fetch, http.StatusForbidden)

		fams := observetest.Scrape(t, metrics)
		for _, tc := range []struct {
			name    string
			outcome string
			want    float64
		}{
			{"platform_box_grants_total", "ok", 1},
			{"platform_box_grants_total", "existing", 1},
			{"platform_box_revokes_total", "ok", 1},
			{"platform_box_capabilities_issued_total", "ok", 1},
			{"platform_box_capabilities_issued_total", box.CodeEntitlementRequired, 1},
			{"platform_box_capabilities_redeemed_total", "ok", 1},
			{"platform_box_capabilities_redeemed_total", box.CodeCapabilityUsed, 1},
		} {
			observetest.Want(t, fams, tc.name, map[string]string{"outcome": tc.outcome}, tc.want)
		}
		// The store's own method names the operation (PostgreSQL's grant
		// may take a second transaction on a conflict).
		if fam := fams["platform_db_operation_duration_seconds"]; fam == nil || observetest.Value(fam, map[string]string{"operation": "sqlstore.Grant"}) < 2 {
			t.Error("want two or more sqlstore.Grant operations timed")
		}
		for _, name := range []string{"platform_box_grants_total", "platform_box_capabilities_redeemed_total"} {
			if fam := fams[name]; fam != nil {
				for label := range observetest.LabelNames(fam) {
					if label != "service" && label != "outcome" {
						t.Errorf("%s carries label %q; want only service and outcome", name, label)
					}
				}
			}
		}
	})
}
