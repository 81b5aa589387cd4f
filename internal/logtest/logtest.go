// Package logtest collects what concurrent code writes (a service's log
// lines, a subprocess's output) so that a test can read it while the
// writers are still running, for example to prove that no secret was
// logged.
package logtest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write and String. The zero
// value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the non-empty lines written so far.
func (b *Buffer) Lines() []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// New returns a JSON slog logger (default options) writing into a fresh
// Buffer, and that Buffer.
func New() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewJSONHandler(b, nil)), b
}
