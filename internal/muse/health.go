package muse

import (
	"sync"
	"time"
)

// Failure skipping (muse.md section 2): a target that failed this many
// times in a row is skipped for SkipFor, then tried again.
const (
	SkipAfter = 5
	SkipFor   = 30 * time.Second
)

type health struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*targetState
}

type targetState struct {
	fails int
	until time.Time
}

func newHealth(now func() time.Time) *health {
	return &health{now: now, m: map[string]*targetState{}}
}

func targetKey(t Target) string { return t.CredentialID + "\x00" + t.Model }

// skipped reports whether t is resting after SkipAfter failures.
func (h *health) skipped(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.m[key]
	return st != nil && st.fails >= SkipAfter && h.now().Before(st.until)
}

func (h *health) failed(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.m[key]
	if st == nil {
		st = &targetState{}
		h.m[key] = st
	}
	st.fails++
	if st.fails >= SkipAfter {
		st.until = h.now().Add(SkipFor)
	}
}

func (h *health) succeeded(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}
