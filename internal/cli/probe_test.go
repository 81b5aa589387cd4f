package cli_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/platformco/platform/internal/cli"
)

func TestProbeSucceedsOnlyOnA2xxAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	env := cli.Env{Getenv: func(string) string { return "" }, Stdout: io.Discard, Stderr: io.Discard}
	for _, tc := range []struct {
		name  string
		args  []string
		ok    bool
		usage bool
	}{
		{"ready", []string{srv.URL + "/readyz"}, true, false},
		{"not ready", []string{srv.URL + "/other"}, false, false},
		{"nothing listening", []string{"http://127.0.0.1:1/readyz"}, false, false},
		{"not a URL", []string{"readyz"}, false, true},
		{"no argument", nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cli.Probe(context.Background(), tc.args, env)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want success %v", err, tc.ok)
			}
			if got := cli.IsUsage(err); got != tc.usage {
				t.Errorf("usage error: got %v, want %v (%v)", got, tc.usage, err)
			}
		})
	}
}
