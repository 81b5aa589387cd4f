// Package seal seals secrets at rest with a service's own 32-byte key
// (AES-256-GCM): courier's COURIER_SECRET_BOX_KEY, muse's MUSE_VAULT_KEY.
// The row's id is the additional data, so a sealed value copied to another
// row does not open there. It is part of the shared floor.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
)

// Sealer seals and opens values bound to a row id.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a sealer over a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("seal: the key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns nonce || ciphertext of plain, bound to id.
func (s *Sealer) Seal(id string, plain []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plain, []byte(id))
}

// Open reverses Seal; it fails for another key, another id or a changed value.
func (s *Sealer) Open(id string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("seal: sealed value too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
}
