package identity

import (
	"context"
	"errors"
	"time"

	"github.com/platformco/platform/internal/errs"
)

// Metrics are identity's domain measurements (deploy.md §1), filled in by
// the wiring (identitycmd, with package observe): the service knows no
// metrics library. A nil *Metrics, or a nil field, records nothing.
type Metrics struct {
	// HashQueued is how long a password hash waited for a slot.
	HashQueued func(time.Duration)
	// Hashed is how long a password hash (or verification) ran.
	Hashed func(time.Duration)
	// Login counts a password sign-in by outcome: LoginSucceeded,
	// LoginFailed, LoginLocked, LoginMFARequired or LoginError.
	Login func(outcome string)
	// Lockout counts a user, or an address no user holds, locked by one
	// wrong password too many.
	Lockout func()
}

// The outcomes Metrics.Login counts: a fixed set, a bounded label.
const (
	LoginSucceeded   = "success"
	LoginFailed      = "failure"
	LoginLocked      = "locked"
	LoginMFARequired = "mfa_required"
	LoginError       = "error"
)

// LoginOutcome classifies Login's answer.
func LoginOutcome(err error) string {
	var mfa *MFARequiredError
	switch {
	case err == nil:
		return LoginSucceeded
	case errors.As(err, &mfa):
		return LoginMFARequired
	case errs.Code(err) == CodeLocked:
		return LoginLocked
	case errs.Code(err) == CodeUnauthorized:
		return LoginFailed
	default:
		return LoginError
	}
}

func (m *Metrics) login(err error) {
	if m != nil && m.Login != nil {
		m.Login(LoginOutcome(err))
	}
}

func (m *Metrics) hashQueued(d time.Duration) {
	if m != nil && m.HashQueued != nil {
		m.HashQueued(d)
	}
}

func (m *Metrics) hashed(d time.Duration) {
	if m != nil && m.Hashed != nil {
		m.Hashed(d)
	}
}

// Observe makes the hasher report to m how long each hash queued and ran.
// Call it before the hasher is used.
func (h *Hasher) Observe(m *Metrics) { h.metrics = m }

// countLockouts wraps store so the failure that locks a user counts one
// lockout: every sign-in path (password, MFA code, password change) goes
// through RecordLoginFailure, which says only whether it counted.
func countLockouts(store Store, m *Metrics) Store {
	if m == nil || m.Lockout == nil {
		return store
	}
	return lockoutCounter{Store: store, m: m}
}

type lockoutCounter struct {
	Store
	m *Metrics
}

func (l lockoutCounter) RecordLoginFailure(ctx context.Context, userID string, threshold int, lockFor time.Duration) (bool, time.Time, error) {
	counted, until, err := l.Store.RecordLoginFailure(ctx, userID, threshold, lockFor)
	if err != nil || !counted {
		return counted, until, err
	}
	// A counted failure that locked leaves the user locked; a wrong
	// password is rare enough that this second read costs nothing.
	if locked, lerr := l.Store.LockedUntil(ctx, userID); lerr == nil && locked != nil {
		l.m.Lockout()
	}
	return counted, until, err
}

func (l lockoutCounter) RecordAddressFailure(ctx context.Context, email string, threshold int, lockFor time.Duration) (bool, time.Time, error) {
	counted, until, err := l.Store.RecordAddressFailure(ctx, email, threshold, lockFor)
	if err != nil || !counted {
		return counted, until, err
	}
	if locked, lerr := l.Store.AddressLockedUntil(ctx, email); lerr == nil && locked != nil {
		l.m.Lockout()
	}
	return counted, until, err
}
