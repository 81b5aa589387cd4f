package idempotency

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"testing"
)

// TestSealedBodyOpensOnlyWithTheServiceSecret: the key derived from the
// Idempotency-Key alone (the old derivation) opens nothing; the service's
// derivation does, and only for the record's own scope.
func TestSealedBodyOpensOnlyWithTheServiceSecret(t *testing.T) {
	s := &Store{secret: bytes.Repeat([]byte{1}, SecretSize), digest: bytes.Repeat([]byte{2}, sha256.Size)}
	_, seal := s.derive("1", "caller:alice")
	sealed := seal.seal([]byte(`{"token":"inv_secret"}`))

	k := sha256.Sum256([]byte("idempotency-body-seal\x00" + "1"))
	block, _ := aes.NewCipher(k[:])
	keyOnly, _ := cipher.NewGCM(block)
	for _, ad := range [][]byte{nil, seal.ad} {
		if _, err := keyOnly.Open(nil, sealed[:12], sealed[12:], ad); err == nil {
			t.Fatal("a key derived from the Idempotency-Key alone opened the sealed body")
		}
	}
	if got, err := seal.open(sealed); err != nil || string(got) != `{"token":"inv_secret"}` {
		t.Fatalf("open = %q, %v; want the body", got, err)
	}
	_, otherScope := s.derive("1", "caller:bob")
	if _, err := otherScope.open(sealed); err == nil {
		t.Error("the body opened under another caller's scope")
	}
	other := &Store{secret: bytes.Repeat([]byte{3}, SecretSize), digest: s.digest}
	_, otherSecret := other.derive("1", "caller:alice")
	if _, err := otherSecret.open(sealed); err == nil {
		t.Error("the body opened under another service secret")
	}
}
