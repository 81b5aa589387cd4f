package observe_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/parlor/parlorcmd"
	"github.com/platformco/platform/internal/service"
	"github.com/platformco/platform/internal/testutil"
)

// freeAddr names a loopback port nothing listens on, for METRICS_ADDR
// (the services do not report the address they bound).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// boundedLabel is what every label value of a platform_ metric may look
// like: a route pattern, a word, a status class; never an id or an email.
var boundedLabel = regexp.MustCompile(`^(unmatched|/[a-z0-9/{}._\-]*|[A-Za-z0-9_.\-()+]+)$`)

func TestEveryServiceServesMetricsOnItsOwnListener(t *testing.T) {
	for _, tc := range []struct {
		service string
		serve   func(ctx context.Context, t *testing.T, metricsAddr string, ln net.Listener) error
	}{
		{"identity", func(ctx context.Context, t *testing.T, addr string, ln net.Listener) error {
			return identitycmd.Serve(ctx, identitycmd.Config{Base: service.Base{Telemetry: observe.Telemetry{MetricsAddr: addr}}, Issuer: "http://id.test"}, discard(), ln)
		}},
		{"box", func(ctx context.Context, t *testing.T, addr string, ln net.Listener) error {
			db := "sqlite:" + filepath.Join(t.TempDir(), "box.db")
			if err := boxcmd.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			return boxcmd.Serve(ctx, boxcmd.Config{Base: service.Base{Telemetry: observe.Telemetry{MetricsAddr: addr}, DatabaseURL: db, DatabaseTimeout: time.Second},
				IdentityTimeout: time.Second, CapabilityTTL: time.Minute, MasterKey: make([]byte, 32)}, discard(), ln)
		}},
		{"gateway", func(ctx context.Context, t *testing.T, addr string, ln net.Listener) error {
			var cfg gatewaycmd.Config
			if err := config.Load(ctx, func(k string) string {
				return map[string]string{"IDENTITY_URL": "http://127.0.0.1:1", "METRICS_ADDR": addr}[k]
			}, &cfg); err != nil {
				return err
			}
			return gatewaycmd.Serve(ctx, cfg, discard(), ln)
		}},
		{"darkroom", func(ctx context.Context, t *testing.T, addr string, ln net.Listener) error {
			var cfg darkroomcmd.Config
			if err := darkroomcmd.Command.Load(ctx, func(k string) string {
				return map[string]string{"DARKROOM_ENV": darkroomcmd.Development, "DARKROOM_S3_ENDPOINT": "http://127.0.0.1:1",
					"DARKROOM_S3_BUCKET": "media", "METRICS_ADDR": addr}[k]
			}, &cfg); err != nil {
				return err
			}
			return darkroomcmd.Serve(ctx, cfg, discard(), ln)
		}},
		{"parlor", func(ctx context.Context, t *testing.T, addr string, ln net.Listener) error {
			return parlorcmd.Serve(ctx, parlorcmd.Config{Base: service.Base{Telemetry: observe.Telemetry{MetricsAddr: addr}}, APIURL: "http://127.0.0.1:1", APITimeout: time.Second}, discard(), ln)
		}},
	} {
		t.Run(tc.service, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			metricsAddr := freeAddr(t)
			done := make(chan error, 1)
			go func() { done <- tc.serve(ctx, t, metricsAddr, ln) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("serve: %v", err)
				}
			}()
			public := "http://" + ln.Addr().String()
			for _, path := range []string{"/healthz", "/healthz", "/no/such/" + "0b7c5a4e-4a1f-4d0e-9a57-3f1f1f3d2b11"} {
				resp, err := http.Get(public + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			resp, err := http.Get(public + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("public port /metrics: got 200, want metrics only on METRICS_ADDR")
			}
			testutil.Eventually(t, 5*time.Second, "the metrics listener", func() bool {
				c, err := net.Dial("tcp", metricsAddr)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
			fams := scrape(t, metricsAddr)
			for _, name := range []string{"platform_http_requests_total", "platform_http_request_duration_seconds",
				"platform_http_requests_in_flight", "platform_build_info", "go_goroutines", "process_resident_memory_bytes"} {
				if fams[name] == nil {
					t.Errorf("scrape has no %s", name)
				}
			}
			if reqs := fams["platform_http_requests_total"]; reqs != nil {
				if got := counter(reqs, map[string]string{"route": "/healthz", "service": tc.service}); got < 2 {
					t.Errorf("requests to /healthz labelled service=%s: got %v, want at least 2", tc.service, got)
				}
			}
			for name, fam := range fams {
				if len(name) < 9 || name[:9] != "platform_" {
					continue
				}
				for _, m := range fam.GetMetric() {
					for _, l := range m.GetLabel() {
						if !boundedLabel.MatchString(l.GetValue()) || len(l.GetValue()) > 80 {
							t.Errorf("%s{%s=%q}: not a bounded label value", name, l.GetName(), l.GetValue())
						}
					}
				}
			}
			if tc.service == "gateway" && (fams["platform_gateway_keyset_usable"] == nil || fams["platform_gateway_keyset_fetches_total"] == nil) {
				t.Errorf("gateway: scrape has no key-set metrics")
			}
			if tc.service == "box" && fams["go_sql_open_connections"] == nil {
				t.Errorf("box with a database: scrape has no go_sql_open_connections")
			}
		})
	}
}
