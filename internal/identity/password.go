package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters. They are stored inside every
// hash, so raising them later only affects new and rehashed passwords.
type HashParams struct {
	MemoryKiB uint32
	Passes    uint32
	Threads   uint8
}

// DefaultHashParams is OWASP's argon2id baseline: 19 MiB, 2 passes.
var DefaultHashParams = HashParams{MemoryKiB: 19 * 1024, Passes: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

// Hasher hashes and verifies passwords with argon2id. At most a fixed
// number of hashes run at once: each takes MemoryKiB of memory and a core,
// so a login flood queues instead of exhausting memory. While requests that
// do no hashing are in flight or were a moment ago (see Serving), hashing
// keeps to half of those slots, at least one, so a flood of sign-ins cannot
// take every core from the reads already being served; alone, it uses them
// all.
type Hasher struct {
	params HashParams
	slots  chan struct{}
	shared chan struct{}
	others atomic.Int64
	// lastServed is when a request that does no hashing last started or
	// ended (Unix nanoseconds).
	lastServed atomic.Int64
	dummy      string

	// Each hash allocates MemoryKiB that the runtime keeps after a burst
	// of sign-ins; once hashing has been quiet for ReleaseAfter, it is
	// handed back to the operating system.
	mu   sync.Mutex
	busy int
	idle *time.Timer

	// onContention hears each change of contended as hashes start;
	// wasContended is the last it heard. Both are guarded by mu.
	onContention func(contended bool)
	wasContended bool
}

// ReleaseAfter is how long hashing must be quiet before the Hasher hands
// its memory back to the operating system. Handing it back costs a full
// collection, and the next hash faults all of it in again (about 19 MiB,
// several milliseconds of kernel time): sign-ins a few seconds apart keep
// their memory, and a service left idle returns it within seconds. At one
// second, the bench's login stretches (two seconds after two seconds of
// quiet) measured 85.6% and 89.9% of raw argon2id on SQLite; at ten,
// 93.9% and 96.8%.
const ReleaseAfter = 10 * time.Second

// NewHasher returns a Hasher running at most concurrency hashes at once
// (GOMAXPROCS when concurrency < 1).
func NewHasher(p HashParams, concurrency int) *Hasher {
	if concurrency < 1 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	h := &Hasher{params: p, slots: make(chan struct{}, concurrency), shared: make(chan struct{}, max(1, concurrency/2))}
	h.dummy = h.encode(make([]byte, saltLen), "unknown-address-placeholder")
	return h
}

// WhileServing is how many hashes may run at once while requests that do no
// hashing are in flight: half the slots, at least one.
func (h *Hasher) WhileServing() int { return cap(h.shared) }

// OnContention registers f to hear each change between hashing alone
// (false, as a new Hasher starts) and hashing while requests that do no
// hashing are in flight or were a moment ago (true): as a hash starts, and
// false once hashing has been quiet for ReleaseAfter. Calls come one at a
// time, in order. Register before the Hasher is used.
func (h *Hasher) OnContention(f func(contended bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onContention = f
}

// Hash returns the encoded argon2id hash of password with a fresh salt.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	return h.encode(salt, password), nil
}

// Verify reports whether password matches encoded. An empty encoded (an
// unknown address) is checked against a dummy hash of the same cost, so the
// answer takes as long either way. needsRehash is true when encoded was
// made with other parameters than the hasher's.
func (h *Hasher) Verify(ctx context.Context, password, encoded string) (ok, needsRehash bool, err error) {
	known := encoded != ""
	if !known {
		encoded = h.dummy
	}
	p, salt, want, err := decodeHash(encoded)
	if err != nil {
		return false, false, err
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return false, false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Passes, p.MemoryKiB, p.Threads, uint32(len(want)))
	release()
	match := subtle.ConstantTimeCompare(got, want) == 1
	return known && match, known && match && p != h.params, nil
}

// servedRecently is how long after the last request that does no hashing
// hashing still keeps to the shared half: under a flood, requests wait for
// a core before they are even read, so "none in flight" alone would say
// the cores are free exactly when they are not.
const servedRecently = 250 * time.Millisecond

// Serving marks a request that does no hashing as in flight until the
// returned function is called; see Hasher.
func (h *Hasher) Serving() (done func()) {
	h.others.Add(1)
	h.lastServed.Store(time.Now().UnixNano())
	return func() {
		h.lastServed.Store(time.Now().UnixNano())
		h.others.Add(-1)
	}
}

// contended reports whether hashing must leave cores to other requests.
func (h *Hasher) contended() bool {
	return h.others.Load() > 0 || time.Now().UnixNano()-h.lastServed.Load() < int64(servedRecently)
}

// acquire waits for a slot, and for one of the shared half too while other
// requests are in flight, or until ctx ends.
func (h *Hasher) acquire(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	contended := h.contended()
	shared := false
	if cap(h.shared) < cap(h.slots) && contended {
		select {
		case h.shared <- struct{}{}:
			shared = true
		case <-ctx.Done():
			<-h.slots
			return nil, ctx.Err()
		}
	}
	h.mu.Lock()
	h.busy++
	if h.idle != nil {
		h.idle.Stop()
	}
	if h.onContention != nil && contended != h.wasContended {
		h.wasContended = contended
		h.onContention(contended)
	}
	h.mu.Unlock()
	return func() {
		if shared {
			<-h.shared
		}
		<-h.slots
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.busy--; h.busy == 0 {
			h.idle = time.AfterFunc(ReleaseAfter, h.rest)
		}
	}, nil
}

// rest runs once hashing has been quiet for ReleaseAfter: hashing is no
// longer contended, and its memory goes back to the operating system.
func (h *Hasher) rest() {
	h.mu.Lock()
	if h.busy == 0 && h.wasContended && h.onContention != nil { // else a hash started meanwhile
		h.wasContended = false
		h.onContention(false)
	}
	h.mu.Unlock()
	debug.FreeOSMemory()
}

func (h *Hasher) encode(salt []byte, password string) string {
	p := h.params
	key := argon2.IDKey([]byte(password), salt, p.Passes, p.MemoryKiB, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Passes, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

var errBadHash = errors.New("password hash: unrecognised encoding")

// decodeHash parses the PHC string format that encode writes.
func decodeHash(s string) (HashParams, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return HashParams{}, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return HashParams{}, nil, nil, errBadHash
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Passes, &p.Threads); err != nil || p.Passes == 0 || p.Threads == 0 {
		return HashParams{}, nil, nil, errBadHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return HashParams{}, nil, nil, errBadHash
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) == 0 {
		return HashParams{}, nil, nil, errBadHash
	}
	return p, salt, key, nil
}
