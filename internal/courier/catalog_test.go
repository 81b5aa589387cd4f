package courier_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/events"
)

// TestAccountEventTypesAreTheCatalogsAccountEvents: the types an endpoint
// may subscribe to are exactly the catalogued, emitted types whose subject
// is the account.
func TestAccountEventTypesAreTheCatalogsAccountEvents(t *testing.T) {
	dir, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := events.LoadCatalog(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range cat.Events {
		if e.Status == events.StatusEmitted && strings.HasPrefix(e.SubjectDescription, "the account") {
			want = append(want, e.Type)
		}
	}
	got := courier.AccountEventTypes()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("AccountEventTypes = %v, want the catalog's %v", got, want)
	}
}
