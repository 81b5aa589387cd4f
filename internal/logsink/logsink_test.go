package logsink

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink records what reaches it, one entry per Write call, and can be
// slowed down to make lines pile up behind a write.
type sink struct {
	mu     sync.Mutex
	writes [][]byte
	stall  time.Duration
	wrote  chan struct{}
}

func newSink() *sink { return &sink{wrote: make(chan struct{}, 1)} }

func (s *sink) Write(p []byte) (int, error) {
	time.Sleep(s.stall)
	s.mu.Lock()
	s.writes = append(s.writes, bytes.Clone(p))
	s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *sink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(bytes.Join(s.writes, nil))
}

func (s *sink) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

// TestConcurrentWritersKeepEveryLineWholeAndInOrder races many loggers
// through a slow stderr, so batches pile up past maxPending and writers
// flush in their own calls too: every line must arrive once, unsplit, and
// each writer's lines in the order it wrote them.
func TestConcurrentWritersKeepEveryLineWholeAndInOrder(t *testing.T) {
	out := newSink()
	out.stall = 2 * time.Millisecond
	w := New(out, time.Millisecond)
	const writers, lines = 32, 400
	pad := strings.Repeat("x", 200)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 256)
			for i := range lines {
				// The buffer is reused, as slog's handler reuses its own:
				// the Writer must have copied the line.
				buf = fmt.Appendf(buf[:0], "%d %d %s\n", g, i, pad)
				if n, err := w.Write(buf); n != len(buf) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	w.Close()

	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.text(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines arrived, want %d", len(got), writers*lines)
	}
	for _, line := range got {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != pad {
			t.Fatalf("line split or mixed with another: %.60q", line)
		}
		g, _ := strconv.Atoi(f[0])
		i, _ := strconv.Atoi(f[1])
		if i != next[g] {
			t.Fatalf("writer %d: line %d arrived where %d was due", g, i, next[g])
		}
		next[g]++
	}
	if c := out.calls(); c >= writers*lines/4 {
		t.Errorf("%d lines took %d writes; they were not batched", writers*lines, c)
	}
}

// TestLinesArriveWithoutClose: a quiet service's last line is written
// after the delay, without anything after it to push it out.
func TestLinesArriveWithoutClose(t *testing.T) {
	out := newSink()
	w := New(out, time.Millisecond)
	defer w.Close()
	for _, line := range []string{"first\n", "second\n"} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		for !strings.HasSuffix(out.text(), line) {
			select {
			case <-out.wrote:
			case <-deadline:
				t.Fatalf("%q not written without Close; have %q", line, out.text())
			}
		}
	}
	if got := out.text(); got != "first\nsecond\n" {
		t.Errorf("wrote %q", got)
	}
}

func TestCloseWritesWhatIsQueuedAndLaterLinesGoStraightThrough(t *testing.T) {
	out := newSink()
	w := New(out, time.Hour) // only Close can write these
	for i := range 3 {
		fmt.Fprintf(w, "queued %d\n", i)
	}
	if got := out.text(); got != "" {
		t.Fatalf("written before the delay or Close: %q", got)
	}
	w.Close()
	w.Close() // a second Close is harmless
	if got, want := out.text(), "queued 0\nqueued 1\nqueued 2\n"; got != want {
		t.Fatalf("after Close: %q, want %q", got, want)
	}
	fmt.Fprint(w, "after close\n")
	if got := out.text(); !strings.HasSuffix(got, "queued 2\nafter close\n") {
		t.Errorf("a line after Close: %q", got)
	}
}

func TestFlushWritesQueuedLinesInOneCall(t *testing.T) {
	out := newSink()
	w := New(out, time.Hour)
	defer w.Close()
	fmt.Fprint(w, "a\n")
	fmt.Fprint(w, "b\n")
	w.Flush()
	w.Flush() // nothing queued: no empty write
	if out.calls() != 1 || out.text() != "a\nb\n" {
		t.Errorf("Flush made %d writes of %q, want one of %q", out.calls(), out.text(), "a\nb\n")
	}
}

// TestCloseWhileWriting: lines written while Close runs, queued or written
// through, keep each writer's order and all arrive.
func TestCloseWhileWriting(t *testing.T) {
	out := newSink()
	w := New(out, time.Millisecond)
	const writers, lines = 16, 300
	var wg sync.WaitGroup
	started := make(chan struct{}, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if i == lines/3 {
					started <- struct{}{}
				}
				fmt.Fprintf(w, "%d %d\n", g, i)
			}
		}()
	}
	for range writers {
		<-started
	}
	w.Close()
	wg.Wait()

	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(out.text(), "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(line, "%d %d", &g, &i); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d arrived where %d was due", g, i, next[g])
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d of %d lines arrived", g, n, lines)
		}
	}
}
