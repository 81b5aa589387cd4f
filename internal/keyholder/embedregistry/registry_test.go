package embedregistry_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/platformco/platform/internal/keyholder/embedregistry"
)

// TestProbesAndRegistry: the embedded registry answers a supervisor's
// /healthz beside the registry API, and nothing else changes.
func TestProbesAndRegistry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := embedregistry.Start(context.Background(), ln, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", http.StatusOK},
		{"HEAD", "/healthz", http.StatusOK},
		{"GET", "/v2/", http.StatusOK},
		{"GET", "/v2/nothing/tags/list", http.StatusNotFound},
		{"POST", "/healthz", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, reg.URL+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
