package identitycmd

import "runtime"

// startProcs is GOMAXPROCS as the process started: the environment's, or
// the runtime's default, the CPUs the process may use.
var startProcs = runtime.GOMAXPROCS(0)

// reserveHashingProcs sets GOMAXPROCS to startProcs plus hashing, the
// hashes that may run while identity serves other requests.
//
// Argon2id is pure Go and computes for 15–30 ms without blocking, so a hash
// holds one of the runtime's Ps from start to end (the scheduler preempts it
// every 10 ms, and it takes a P back at once). With one P per core, one hash
// on two cores left every other request of the process one P, however the
// kernel shared the cores: during the bench's login flood (reads at 32
// clients while 64 clients sign in, two cores), reads kept 49% and 52% of
// their rate alone on SQLite, 60% and 60% on PostgreSQL. With one P more
// they kept 61% and 63%, 77% and 74%. Sign-ins alone lose little: on
// PostgreSQL 74, 72 and 74 logins/s against 74, 74 and 76.
//
// Setting GOMAXPROCS stops the runtime from following later changes of the
// process's CPU limit; a deployment that needs that sets GOMAXPROCS itself,
// which leaves this alone.
func reserveHashingProcs(hashing int) {
	runtime.GOMAXPROCS(startProcs + hashing)
}
