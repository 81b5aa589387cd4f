package gatewaycmd

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/platformco/platform/internal/observe/observetest"
	"github.com/platformco/platform/internal/testutil"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

// Requests over the limit, through the gateway's handler, count as
// rejections by the allowance spent, never by the address or token.
func TestRateLimitRejectionsAreCountedByScope(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"me"}`))
	})
	ks := tokenstest.NewKeyServer(t, mux)
	metricsAddr := observetest.FreeAddr(t)
	cfg, err := loadConfig(env(map[string]string{"IDENTITY_URL": ks.URL, "GATEWAY_RATE_LIMIT": "2", "METRICS_ADDR": metricsAddr}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, slog.New(slog.DiscardHandler), ln) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	testutil.Eventually(t, 10*time.Second, "the gateway to answer", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})

	token := ks.Token(t, "k1", ks.Claims("u1", time.Minute))
	var statuses []int
	for range 3 {
		req, _ := http.NewRequest("GET", base+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	if statuses[2] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v, want the third refused with 429", statuses)
	}
	fams := observetest.ScrapeAddr(t, metricsAddr)
	observetest.Want(t, fams, "platform_gateway_rate_limit_rejections_total", map[string]string{"scope": "ip"}, 1)
	observetest.Want(t, fams, "platform_gateway_rate_limit_rejections_total", nil, 1)
	if fam := fams["platform_gateway_rate_limit_rejections_total"]; fam != nil {
		for name := range observetest.LabelNames(fam) {
			if name != "service" && name != "scope" {
				t.Errorf("rejections carry label %q; want only service and scope", name)
			}
		}
	}
}
