package box

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestCapabilityToken(t *testing.T) {
	token, selector, err := newCapabilityToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, capabilityPrefix) || len(token) != len(capabilityPrefix)+64 {
		t.Errorf("token %q: want %s and 64 base64url characters", token, capabilityPrefix)
	}
	if id, err := uuid.Parse(selector); err != nil || id.Version() != 7 {
		t.Errorf("selector %q: want a version 7 UUID (%v)", selector, err)
	}
	if got, ok := capabilitySelector(token); !ok || got != selector {
		t.Errorf("capabilitySelector(new token) = %q, %v; want %q", got, ok, selector)
	}

	// Selectors follow issue order, which is what keeps the store's inserts
	// at the end of its index.
	prev := selector
	for range 1000 {
		_, next, err := newCapabilityToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if next <= prev {
			t.Fatalf("selector %s after %s: not increasing", next, prev)
		}
		prev = next
	}

	// Two tokens never share their secret, even from one selector's clock
	// tick.
	a, _, _ := newCapabilityToken(rand.Reader)
	b, _, _ := newCapabilityToken(rand.Reader)
	if a == b {
		t.Error("two tokens are equal")
	}

	// A token minted before selectors is found under its digest's prefix.
	legacy := capabilityPrefix + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, secretBytes))
	sum := sha256.Sum256([]byte(legacy))
	if got, ok := capabilitySelector(legacy); !ok || got != uuid.UUID(sum[:16]).String() {
		t.Errorf("capabilitySelector(legacy token) = %q, %v; want the digest's first 16 bytes", got, ok)
	}
}

func TestCapabilitySelectorRefuses(t *testing.T) {
	for _, token := range []string{
		"",
		"boxcap_",
		"boxcap_unknown",
		"boxcap_" + strings.Repeat("A", 63),       // 47 bytes
		"boxcap_" + strings.Repeat("A", 65),       // not base64 of whole bytes
		"boxcap_" + strings.Repeat("A", 42),       // 31 bytes
		"boxcap_" + strings.Repeat("+", 64),       // standard, not URL, alphabet
		"boxcap_" + strings.Repeat("A", 42) + "B", // non-zero trailing bits
		"other_" + strings.Repeat("A", 64),
		strings.Repeat("A", 64),
	} {
		if got, ok := capabilitySelector(token); ok {
			t.Errorf("capabilitySelector(%q) = %q, true; want false", token, got)
		}
	}
}
