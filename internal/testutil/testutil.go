// Package testutil holds the one polling helper every test uses to wait for
// state that changes in the background: tests never sleep for a fixed time
// and hope.
package testutil

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually checks; short enough that a test waits
// little past the moment its condition holds.
const pollEvery = 10 * time.Millisecond

// Eventually checks cond every 10 ms until it holds, failing the test,
// with what in the message, when it has not held within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}
