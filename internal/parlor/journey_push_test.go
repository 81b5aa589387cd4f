//go:build e2e

package parlor_test

import "testing"

// journeyPush: on Settings the owner's browser registers the service
// worker and subscribes to notifications against platform dev's own VAPID
// pair; courier holds the subscription, the page lists the browser as a
// device, and the owner removes it again.
func journeyPush(t *testing.T, owner, member, operator *browser, base, team string) {
	t.Helper()
	subscribeThisBrowserToPush(t, owner, base, "owner@example.com", "correct horse battery")
}
