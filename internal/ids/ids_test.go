package ids

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"Canonical", "0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"UpperCaseNormalized", "0F8FAD5B-D9CB-469F-A165-70867728950E", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"Braces", "{0f8fad5b-d9cb-469f-a165-70867728950e}", "", false},
		{"NoHyphens", "0f8fad5bd9cb469fa16570867728950e", "", false},
		{"TrailingNewline", "0f8fad5b-d9cb-469f-a165-70867728950\n", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := Parse(tt.in); got != tt.want || ok != tt.ok {
				t.Errorf("Parse(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"Canonical", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"UpperCase", "0F8FAD5B-D9CB-469F-A165-70867728950E", false},
		{"Braces", "{0f8fad5b-d9cb-469f-a165-70867728950e}", false},
		{"URN", "urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e", false},
		{"NoHyphens", "0f8fad5bd9cb469fa16570867728950e", false},
		{"MisplacedHyphen", "0f8fad5-bd9cb-469f-a165-70867728950e", false},
		{"NotHex", "0f8fad5b-d9cb-469f-a165-70867728950g", false},
		{"OneUpperCaseDigit", "0f8fad5b-d9cB-469f-a165-70867728950e", false},
		{"Empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Valid(tt.in); got != tt.want {
				t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// New's ids are the platform's spelling and come in order: what makes a
// table keyed by them grow at its end.
func TestNewIsValidAndOrdered(t *testing.T) {
	prev := New()
	for range 10000 {
		id := New()
		if !Valid(id) {
			t.Fatalf("New() = %q, not in the platform's spelling", id)
		}
		if id <= prev {
			t.Fatalf("New() = %q after %q: not ascending", id, prev)
		}
		prev = id
	}
}

// TestValidAllocatesNothing: every authenticated request checks two ids.
func TestValidAllocatesNothing(t *testing.T) {
	id := New()
	if n := testing.AllocsPerRun(100, func() {
		if !Valid(id) {
			t.Fatalf("Valid(%q) = false", id)
		}
	}); n != 0 {
		t.Errorf("Valid allocates %.0f times, want none", n)
	}
}
