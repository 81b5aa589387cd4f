package darkroom

import (
	"bytes"
	"image"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gen2brain/webp"

	"github.com/platformco/platform/internal/darkroom/darkroomtest"
)

// procKiB reads a VmRSS-like line of /proc/self/status in KiB; 0 where
// there is none.
func procKiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return n
		}
	}
	return 0
}

// BenchmarkEightFirstVariants renders eight card variants of a 4000 ×
// 3000 JPEG at once under two decode slots, as the bench's RSS measure
// asks for them, and reports where the process's memory goes: the
// resident peak before anything is rendered, after the WebP encoder's
// first use (its WebAssembly module compiled), and after the eight; the
// Go heap's peak while they run, sampled.
func BenchmarkEightFirstVariants(b *testing.B) {
	data := darkroomtest.JPEG(b, 4000, 3000)
	p := Preset{Name: "card", Width: 480, Height: 270, Mode: ModeCover}
	s := NewService(Options{Decodes: 2})
	runtime.GC()
	start := procKiB("VmHWM")
	var buf bytes.Buffer
	if err := webp.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		b.Fatal(err)
	}
	afterInit := procKiB("VmHWM")
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				release, err := s.acquire(b.Context())
				if err != nil {
					b.Error(err)
					return
				}
				defer release()
				d := bytes.Clone(data) // each request reads its own original, under its slot
				if _, _, _, err := s.render(d, TypeJPEG, p, "webp"); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	close(done)
	<-sampled
	const mib = 1024
	b.ReportMetric(start/mib, "hwm-start-MiB")
	b.ReportMetric(afterInit/mib, "hwm-webp-init-MiB")
	b.ReportMetric(procKiB("VmHWM")/mib, "hwm-end-MiB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "heap-inuse-peak-MiB")
}
