package devcmd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/cli"
)

func TestBannerNamesEventsAndTheFirstRelease(t *testing.T) {
	var out bytes.Buffer
	env := cli.Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &bytes.Buffer{}}
	printBanner(env, t.TempDir(), "nats://127.0.0.1:4222", "localhost")
	for _, want := range []string{
		"events    nats://127.0.0.1:4222",
		"go run ./cmd/platform keyholder publish --repository platform --version 1.0.0",
		"PLATFORM_TOKEN is a staff user's session token",
		"POST http://localhost:8080/v1/session",
		"Request logs are at debug here",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRequestLinesAtDebug(t *testing.T) {
	tests := []struct {
		name  string
		level string
		want  bool
	}{
		{"HiddenAtInfo", "info", false},
		{"ShownAtDebug", "debug", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			env := cli.Env{Getenv: func(k string) string { return map[string]string{"LOG_LEVEL": tt.level}[k] }, Stderr: &logs}
			log := devLogger(env, "gateway").With("k", "v")
			log.Info("request", "path", "/x")
			log.Info("listening", "addr", ":8080")
			if got := strings.Contains(logs.String(), `"msg":"request"`); got != tt.want {
				t.Errorf("request line logged = %t, want %t:\n%s", got, tt.want, logs.String())
			}
			if tt.want && !strings.Contains(logs.String(), `"level":"DEBUG","msg":"request"`) {
				t.Errorf("the request line is not at debug:\n%s", logs.String())
			}
			if !strings.Contains(logs.String(), `"msg":"listening"`) {
				t.Errorf("other lines are lost:\n%s", logs.String())
			}
		})
	}
}

func TestWaitReadyPollsUntilReady(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	waitReady(context.Background(), srv.URL, time.Minute)
	if n := calls.Load(); n != 3 {
		t.Errorf("waitReady asked %d times, want 3 (two 503s, then ready)", n)
	}
}
