package registry_test

import (
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/sqldb"
)

// TestBlobStreams pulls a 64 MiB layer through keyholder (and the embedded
// registry, in this same process) and samples the heap meanwhile: it grows
// by far less than the layer, so neither buffers it.
func TestBlobStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes a 64 MiB layer")
	}
	const size = 64 << 20
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{})
	// Only the layer's handle is kept, so the pushed image's bytes are
	// garbage before the baseline is read.
	layer := layerOf(t, p.PushImage("kit", "1.0.0", size, 1))
	_, cred := p.Entitled("big@example.com", "kit", "")

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()

	req, _ := http.NewRequest("GET", p.KeyholderURL+"/v2/kit/blobs/"+layer, nil)
	req.SetBasicAuth(cred.Username, cred.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("blob: %v", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	wg.Wait()
	if err != nil || resp.StatusCode != http.StatusOK || n < size {
		t.Fatalf("got %d, %d bytes (%v), want 200 with at least %d bytes", resp.StatusCode, n, err, size)
	}
	if grown := int64(peak.Load()) - int64(baseline); grown > 16<<20 {
		t.Errorf("heap grew by %d MiB while streaming a %d MiB layer, want under 16 MiB", grown>>20, size>>20)
	}
}
