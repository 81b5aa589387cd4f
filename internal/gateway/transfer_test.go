package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/gateway"
)

// TestTransfersOutliveTheServerTimeouts: behind a server whose whole-
// request timeouts are 300 ms, a proxied download and upload that keep
// moving for about a second go through whole, because the gateway moves
// each deadline with the bytes (gateway.Options.TransferIdle).
func TestTransfersOutliveTheServerTimeouts(t *testing.T) {
	const chunks, gap = 8, 120 * time.Millisecond
	chunk := strings.Repeat("m", 16<<10)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet: // a download: chunks with pauses between
			rc := http.NewResponseController(w)
			for range chunks {
				_, _ = io.WriteString(w, chunk)
				_ = rc.Flush()
				time.Sleep(gap)
			}
		default: // an upload: answer how much arrived
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, n)
		}
	})
	dr := httptest.NewServer(upstream)
	t.Cleanup(dr.Close)
	h := newHarness(t, setup{darkroom: dr.URL})
	gw := gatewayWith(t, h, 250*time.Millisecond)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	t.Run("download", func(t *testing.T) {
		resp, err := http.Get(base + "/v1/media/m1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || n != chunks*int64(len(chunk)) {
			t.Fatalf("downloaded %d of %d bytes: %v", n, chunks*len(chunk), err)
		}
	})
	t.Run("upload", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			for range chunks {
				if _, err := io.WriteString(pw, chunk); err != nil {
					return
				}
				time.Sleep(gap)
			}
			pw.Close()
		}()
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/media", pr)
		req.Header.Set("Authorization", "Bearer "+h.token(t))
		req.Header.Set("Content-Type", "image/png")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if got, _ := strconv.Atoi(string(body)); resp.StatusCode != http.StatusOK || got != chunks*len(chunk) {
			t.Fatalf("upload: %d %q, want 200 and %d bytes", resp.StatusCode, body, chunks*len(chunk))
		}
	})
	t.Run("stalled upload cut", func(t *testing.T) {
		// One chunk, then nothing for well past TransferIdle: the
		// upstream never receives the whole body.
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, chunk)
			time.Sleep(800 * time.Millisecond) // the stall under test
			_, _ = io.WriteString(pw, chunk)
			pw.Close()
		}()
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/media", pr)
		req.Header.Set("Authorization", "Bearer "+h.token(t))
		req.Header.Set("Content-Type", "image/png")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // the connection was cut
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if got, _ := strconv.Atoi(string(body)); resp.StatusCode == http.StatusOK && got == 2*len(chunk) {
			t.Fatalf("a body that stood still 800 ms went through whole with TransferIdle 250 ms")
		}
	})
}

// gatewayWith is h's gateway built again with TransferIdle idle.
func gatewayWith(t *testing.T, h *harness, idle time.Duration) *gateway.Gateway {
	t.Helper()
	opts := h.opts
	opts.TransferIdle = idle
	return gateway.New(opts)
}
