// Package logsink batches a process's log lines on their way to stderr.
//
// Every service logs one line per request. Written one at a time, each line
// is a system call of its own: in the gateway, whose whole work per request
// is a handful of socket reads and writes, the log's writes took a sixth of
// its system-call time under load. A Writer holds lines for at most its
// delay and writes what gathered in one call, in the order the lines came.
//
// The price is that a process that dies without closing its Writer (an
// unrecovered panic, SIGKILL) loses the lines of its last delay. The panic
// itself still reaches stderr: the runtime writes it directly.
package logsink

import (
	"io"
	"sync"
	"time"
)

// maxPending is how much a Writer holds before the writer of the line that
// passes it flushes in its own call, so a burst costs memory only up to
// here and a stalled stderr slows the loggers instead of growing the heap.
const maxPending = 256 << 10

// Writer is an io.Writer that batches. Lines keep their order, and each
// Write is written whole, never split between two batches.
type Writer struct {
	out   io.Writer
	delay time.Duration

	outMu sync.Mutex // held while a batch is written, so batches keep their order
	mu    sync.Mutex // guards the fields below
	buf   []byte     // lines not yet written
	spare []byte     // the last batch's buffer, for reuse
	done  bool       // closed: writes go straight through

	kick chan struct{} // the first line after a flush starts the delay
	quit chan struct{}
	wg   sync.WaitGroup
}

// New returns a Writer that writes to out at most delay after a line
// arrives. Close it before the process exits, or the last lines are lost.
func New(out io.Writer, delay time.Duration) *Writer {
	w := &Writer{
		out:   out,
		delay: delay,
		kick:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
	}
	w.wg.Add(1)
	go w.run()
	return w
}

// Write queues a copy of p and never fails, since a log line has nowhere
// to report a failure to. After Close it writes p through, after anything
// still queued, and returns out's result.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		w.outMu.Lock()
		defer w.outMu.Unlock()
		w.flushLocked() // a line queued while Close ran goes first
		return w.out.Write(p)
	}
	first := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= maxPending
	w.mu.Unlock()
	switch {
	case full:
		w.Flush()
	case first:
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Flush writes every line queued so far.
func (w *Writer) Flush() {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.flushLocked()
}

// flushLocked is Flush with outMu held.
func (w *Writer) flushLocked() {
	w.mu.Lock()
	batch := w.buf
	if len(batch) == 0 {
		w.mu.Unlock()
		return
	}
	w.buf, w.spare = w.spare[:0], nil
	w.mu.Unlock()
	// stderr that fails has nowhere to report to; the lines are dropped
	// rather than retried forever.
	_, _ = w.out.Write(batch)
	w.mu.Lock()
	if cap(batch) <= maxPending*2 {
		w.spare = batch[:0]
	}
	w.mu.Unlock()
}

// Close writes what is queued and makes later writes go straight to out.
func (w *Writer) Close() {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done = true
	w.mu.Unlock()
	close(w.quit)
	w.wg.Wait()
	w.Flush()
}

func (w *Writer) run() {
	defer w.wg.Done()
	t := time.NewTimer(w.delay)
	t.Stop()
	for {
		select {
		case <-w.kick:
		case <-w.quit:
			return
		}
		t.Reset(w.delay)
		select {
		case <-t.C:
		case <-w.quit:
			t.Stop()
			return
		}
		w.Flush()
	}
}
