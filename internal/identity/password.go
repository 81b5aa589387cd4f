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
// number of hashes run at once (by default one per core): each takes
// MemoryKiB of memory and a core, so a flood of sign-ins queues instead
// of exhausting memory, and argon2's memory is bounded by that number
// times MemoryKiB (MemoryBound).
//
// The bound is contention-aware (decision 0019): while sessions are being
// checked (the service's reads are in flight) only half of it (at least
// one) is taken, so a sign-in flood leaves the other cores to the reads;
// sign-ins alone get all of it.
type Hasher struct {
	params HashParams
	slots  chan struct{} // taken at any time: half the bound, at least one
	spare  chan struct{} // the rest: taken only while nothing else is served
	dummy  string

	// contended reports whether other work is in flight (Service sets
	// it to "a session check is running"); nil: never.
	contended func() bool

	// Each hash allocates MemoryKiB that the runtime keeps after a burst
	// of sign-ins; once hashing has been quiet for ReleaseAfter, it is
	// handed back to the operating system.
	mu   sync.Mutex
	busy int
	idle *time.Timer

	metrics *Metrics // see Observe
}

// ReleaseAfter is how long hashing must be quiet before the Hasher hands
// its memory back to the operating system. Handing it back costs a full
// collection, and the next hash faults all of it in again (about 19 MiB,
// several milliseconds of kernel time): sign-ins a few seconds apart keep
// their memory, and a service left idle returns it within seconds.
const ReleaseAfter = 10 * time.Second

// DefaultHashConcurrency is how many hashes run at once unless configured:
// one per core (GOMAXPROCS), which is what logins need to keep up with
// raw argon2id. While sessions are being checked the hasher takes only
// half of it (decision 0019), so reads during a sign-in flood keep the
// other cores; IDENTITY_HASH_CONCURRENCY sets another bound (0017).
func DefaultHashConcurrency() int { return max(1, runtime.GOMAXPROCS(0)) }

// MemoryBound is the most memory argon2 holds at once in h's hashes:
// its concurrency times MemoryKiB, in bytes.
func (h *Hasher) MemoryBound() uint64 {
	return uint64(cap(h.slots)+cap(h.spare)) * uint64(h.params.MemoryKiB) * 1024
}

// NewHasher returns a Hasher running at most concurrency hashes at once
// (DefaultHashConcurrency when concurrency < 1).
func NewHasher(p HashParams, concurrency int) *Hasher {
	if concurrency < 1 {
		concurrency = DefaultHashConcurrency()
	}
	shared := max(1, concurrency/2)
	h := &Hasher{params: p, slots: make(chan struct{}, shared), spare: make(chan struct{}, concurrency-shared)}
	h.dummy = h.encode(make([]byte, saltLen), "unknown-address-placeholder")
	return h
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

// take waits for a slot, or until ctx ends, and returns the channel it
// holds one of: a spare slot only while nothing else is in flight when
// the hash arrives (a hash waiting for a slot does not look again; the
// next one to arrive does).
func (h *Hasher) take(ctx context.Context) (chan struct{}, error) {
	select {
	case h.slots <- struct{}{}:
		return h.slots, nil
	default:
	}
	spare := h.spare
	if cap(spare) == 0 || (h.contended != nil && h.contended()) {
		spare = nil // a nil channel's case never proceeds
	}
	select {
	case h.slots <- struct{}{}:
		return h.slots, nil
	case spare <- struct{}{}:
		return spare, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// acquire waits for a slot, or until ctx ends.
func (h *Hasher) acquire(ctx context.Context) (release func(), err error) {
	queued := time.Now()
	held, err := h.take(ctx)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	h.metrics.hashQueued(started.Sub(queued))
	h.mu.Lock()
	h.busy++
	if h.idle != nil {
		h.idle.Stop()
	}
	h.mu.Unlock()
	return func() {
		h.metrics.hashed(time.Since(started))
		<-held
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.busy--; h.busy == 0 {
			h.idle = time.AfterFunc(ReleaseAfter, debug.FreeOSMemory)
		}
	}, nil
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
