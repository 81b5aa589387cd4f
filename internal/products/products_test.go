package products_test

import (
	"slices"
	"testing"

	"github.com/platformco/platform/internal/products"
)

func TestValid(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{"kit", true}, {"platform", true}, {"identity", true}, {"courier", true},
		{"", false}, {"Kit", false}, {"kit ", false}, {"box", false},
	}
	for _, tt := range tests {
		if got := products.Valid(tt.p); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

// TestAllIsValidAndFresh: All lists exactly the valid products, and a
// caller changing its slice changes nobody else's.
func TestAllIsValidAndFresh(t *testing.T) {
	all := products.All()
	if want := []string{"kit", "platform", "identity", "courier"}; !slices.Equal(all, want) {
		t.Fatalf("All() = %v, want %v", all, want)
	}
	all[0] = "changed"
	if products.All()[0] != products.Kit {
		t.Error("All() shares its slice between callers")
	}
}
