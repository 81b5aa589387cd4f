package identitycmd

import (
	"time"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/observe"
)

// hashBuckets span a hash's cost (tens of milliseconds) and a queue
// behind a burst of sign-ins (seconds).
var hashBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// domainMetrics is identity's metrics seam backed by m's registry: password
// hashes' queue wait and duration, sign-ins by outcome, lockouts. nil
// without metrics.
func domainMetrics(m *observe.Metrics) *identity.Metrics {
	if m == nil {
		return nil
	}
	queued := m.Histogram("platform_identity_password_hash_queue_seconds",
		"Time a password hash waited for one of the bounded hashing slots.", hashBuckets).WithLabelValues()
	hashed := m.Histogram("platform_identity_password_hash_duration_seconds",
		"Time a password hash or verification ran.", hashBuckets).WithLabelValues()
	logins := observe.NewOutcomes(m.Counter("platform_identity_logins_total",
		"Password sign-ins by outcome.", "outcome"),
		identity.LoginSucceeded, identity.LoginFailed, identity.LoginLocked, identity.LoginMFARequired, identity.LoginError)
	lockouts := m.Counter("platform_identity_lockouts_total",
		"Users, and addresses no user holds, locked by one wrong password or code too many.").WithLabelValues()
	return &identity.Metrics{
		HashQueued: func(d time.Duration) { queued.Observe(d.Seconds()) },
		Hashed:     func(d time.Duration) { hashed.Observe(d.Seconds()) },
		Login:      logins.Inc,
		Lockout:    lockouts.Inc,
	}
}
