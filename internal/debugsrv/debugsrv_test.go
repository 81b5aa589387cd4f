package debugsrv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/logtest"
)

func TestStartServesProfilesUntilStopped(t *testing.T) {
	logger, _ := logtest.New()
	addr, stop, err := Start(context.Background(), "127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/me on the debug listener: %d, want 404", resp.StatusCode)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("after stop: %v, want connection refused", err)
	}
}
