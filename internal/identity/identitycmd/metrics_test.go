package identitycmd

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/httpapi"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/observe/observetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// Sign-ins through identity's handler leave their outcomes, the lockout
// and the password hashes' timings in the scrape, labelled by outcome
// only (never an address).
func TestIdentityDomainMetricsThroughTheHandler(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{LockoutThreshold: 2})
		metrics := observe.New("identity")
		m := domainMetrics(metrics)
		observe.Statements(env.DB, metrics, nil)
		hasher := identity.NewHasher(identitytest.CheapHash, 0)
		hasher.Observe(m)
		opts := env.Options
		opts.Metrics = m
		svc := identity.NewService(env.Store, hasher, env.Ring, opts)
		srv := httptest.NewServer(metrics.Middleware(httpapi.NewServer(httpapi.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler)})))
		defer srv.Close()

		post := func(path, body string, want int) {
			t.Helper()
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("POST %s: status %d, want %d", path, resp.StatusCode, want)
			}
		}
		const pw = identitytest.Password
		for _, step := range []struct {
			path, body string
			status     int
		}{
			{"/v1/users", `{"email":"ada@example.com","password":"` + pw + `"}`, http.StatusCreated},
			{"/v1/session", `{"email":"ada@example.com","password":"` + pw + `"}`, http.StatusCreated},
			{"/v1/session", `{"email":"ada@example.com","password":"wrong password"}`, http.StatusUnauthorized},
			{"/v1/session", `{"email":"ada@example.com","password":"wrong password"}`, http.StatusUnauthorized},
			{"/v1/session", `{"email":"ada@example.com","password":"` + pw + `"}`, http.StatusLocked},
			{"/v1/session", `{"email":"nobody@example.com","password":"` + pw + `"}`, http.StatusUnauthorized},
		} {
			post(step.path, step.body, step.status)
		}

		fams := observetest.Scrape(t, metrics)
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"platform_identity_logins_total", map[string]string{"outcome": identity.LoginSucceeded}, 1},
			{"platform_identity_logins_total", map[string]string{"outcome": identity.LoginFailed}, 3},
			{"platform_identity_logins_total", map[string]string{"outcome": identity.LoginLocked}, 1},
			{"platform_identity_lockouts_total", nil, 1},
			// One hash at registration, one verification per sign-in but
			// the one refused before hashing (locked).
			{"platform_identity_password_hash_duration_seconds", nil, 5},
			{"platform_identity_password_hash_queue_seconds", nil, 5},
			{"platform_db_operation_duration_seconds", map[string]string{"operation": "sqlstore.RecordLoginFailure"}, 2},
			{"platform_db_operation_duration_seconds", map[string]string{"operation": "sqlstore.CreateUser"}, 1},
		} {
			observetest.Want(t, fams, tc.name, tc.labels, tc.want)
		}
		if fam := fams["platform_identity_logins_total"]; fam != nil {
			for name := range observetest.LabelNames(fam) {
				if name != "service" && name != "outcome" {
					t.Errorf("logins carry label %q; want only service and outcome", name)
				}
			}
		}
	})
}
