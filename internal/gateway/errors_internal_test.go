package gateway

import (
	"testing"

	"github.com/platformco/platform/internal/box"
)

// TestBoxMessagesAreBoxs: the edge answers box's shared codes in box's
// own words, copied because the gateway imports no service.
func TestBoxMessagesAreBoxs(t *testing.T) {
	for code, want := range map[string]string{"unauthenticated": box.MsgUnauthenticated, "not_found": box.MsgNotFound} {
		if got := boxMessages[code]; got != want {
			t.Errorf("boxMessages[%q] = %q, want box's %q", code, got, want)
		}
	}
}
