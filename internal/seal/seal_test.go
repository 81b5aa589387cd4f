package seal

import (
	"strings"
	"testing"
)

// TestSealer: a sealed value hides its plaintext and opens only with its
// key and for its row.
func TestSealer(t *testing.T) {
	s, err := New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal("id-1", []byte("secret"))
	if strings.Contains(string(sealed), "secret") {
		t.Fatal("sealed value holds the plaintext")
	}
	if got, err := s.Open("id-1", sealed); err != nil || string(got) != "secret" {
		t.Errorf("Open = %q, %v; want secret", got, err)
	}
	if _, err := s.Open("id-2", sealed); err == nil {
		t.Error("a value sealed for one row opened for another")
	}
	other, _ := New([]byte("fedcba9876543210fedcba9876543210"))
	if _, err := other.Open("id-1", sealed); err == nil {
		t.Error("a value opened with another key")
	}
}
