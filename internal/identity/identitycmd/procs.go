package identitycmd

import "runtime"

// startProcs is GOMAXPROCS as the process started: the environment's, or
// the runtime's default, the CPUs the process may use.
var startProcs = runtime.GOMAXPROCS(0)

// hashingProcs sets GOMAXPROCS to startProcs, plus hashing while hashes run
// beside requests that do no hashing (contended). identity calls it from
// Hasher.OnContention, so the runtime has the extra Ps only while sign-ins
// share the process with other requests (until the next hash alone, or
// until hashing has been quiet for identity.ReleaseAfter).
//
// Argon2id is pure Go and computes for 15–30 ms without blocking, so a hash
// holds one of the runtime's Ps from start to end (the scheduler preempts it
// every 10 ms, and it takes a P back at once). With one P per core, one hash
// on two cores left every other request of the process one P, however the
// kernel shared the cores: during the bench's login flood (reads at 32
// clients while 64 clients sign in, two cores), reads kept 49% and 52% of
// their rate alone on SQLite, 60% and 60% on PostgreSQL. With one P more
// they kept 61% and 63%, 77% and 74%.
//
// Sign-ins alone pay for an extra P: its thread wakes to look for work
// whenever a goroutine becomes runnable, and the kernel then switches three
// threads on two cores, whose caches argon2id's 19 MiB no longer has to
// itself. On PostgreSQL, logins alone kept 84.0% and 86.9% of raw
// argon2id's rate with the P held for good, 95.3% and 93.4% without it.
//
// Setting GOMAXPROCS stops the world for some microseconds, at most once
// per hash and only when the contention changes; it also stops the runtime
// from following later changes of the process's CPU limit, so a deployment
// that needs that sets GOMAXPROCS itself, which leaves this alone.
func hashingProcs(contended bool, hashing int) {
	n := startProcs
	if contended {
		n += hashing
	}
	runtime.GOMAXPROCS(n)
}
