// Package jwks is the gateway's cache of identity's token-verification key
// set. It exists because the public JWKS caches either hide an outage behind
// stale keys forever or answer 401 for it; this one keeps good keys for
// exactly the configured TTL, refreshes them in the background one fetch at a
// time, never lets a bad answer replace good keys, and reports its own state
// so the edge can answer 503 for an outage and 401 only for a bad token.
package jwks

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Algorithms a key may declare. A token is verified only with a key whose
// declared algorithm equals the token's alg header, so neither "none" nor an
// HMAC algorithm keyed with public key bytes can ever be accepted.
const (
	AlgEdDSA = "EdDSA" // kty OKP, crv Ed25519
	AlgES256 = "ES256" // kty EC, crv P-256
)

// Key is one parsed verification key: its id, the one algorithm it may
// verify, and the public key (ed25519.PublicKey or *ecdsa.PublicKey).
type Key struct {
	ID     string
	Alg    string
	Public crypto.PublicKey
}

// jwk is the subset of RFC 7517/8037 members the gateway reads.
type jwk struct {
	Kty    string   `json:"kty"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	D      string   `json:"d"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
}

// ParseSet parses a JWKS document into its usable signing keys by kid. Keys
// the gateway cannot or must not use (no kid, not for signatures, private
// material published, symmetric, unsupported curve, alg inconsistent with
// the key type) are left out and reported in skipped. A document that is not
// a key set, or holds no usable key, is an error: the caller keeps the keys
// it had.
func ParseSet(body []byte) (keys map[string]Key, skipped []string, err error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, fmt.Errorf("key set is not a JSON object with a keys array: %w", err)
	}
	if doc.Keys == nil {
		return nil, nil, errors.New("key set has no keys array")
	}
	keys = make(map[string]Key, len(doc.Keys))
	for i, raw := range doc.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: not a JSON object", i))
			continue
		}
		k, err := parseKey(j)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %v", i, j.Kid, err))
			continue
		}
		if _, dup := keys[k.ID]; dup {
			// Two keys under one kid make the choice ambiguous; refuse both
			// rather than guess which one identity meant.
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): duplicate kid", i, j.Kid))
			delete(keys, k.ID)
			continue
		}
		keys[k.ID] = k
	}
	if len(keys) == 0 {
		return nil, skipped, errors.New("key set holds no usable signing key")
	}
	return keys, skipped, nil
}

func parseKey(j jwk) (Key, error) {
	if j.Kid == "" {
		return Key{}, errors.New("no kid")
	}
	if j.Use != "" && j.Use != "sig" {
		return Key{}, fmt.Errorf("use %q is not sig", j.Use)
	}
	if len(j.KeyOps) > 0 && !contains(j.KeyOps, "verify") {
		return Key{}, errors.New("key_ops does not allow verify")
	}
	if j.D != "" {
		return Key{}, errors.New("private key material published")
	}
	switch j.Kty {
	case "OKP":
		if j.Crv != "Ed25519" {
			return Key{}, fmt.Errorf("OKP curve %q is not supported", j.Crv)
		}
		if j.Alg != "" && j.Alg != AlgEdDSA {
			return Key{}, fmt.Errorf("alg %q does not match an Ed25519 key", j.Alg)
		}
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return Key{}, errors.New("x is not a base64url Ed25519 public key")
		}
		return Key{ID: j.Kid, Alg: AlgEdDSA, Public: ed25519.PublicKey(x)}, nil
	case "EC":
		if j.Crv != "P-256" {
			return Key{}, fmt.Errorf("EC curve %q is not supported", j.Crv)
		}
		if j.Alg != "" && j.Alg != AlgES256 {
			return Key{}, fmt.Errorf("alg %q does not match a P-256 key", j.Alg)
		}
		x, errX := base64.RawURLEncoding.DecodeString(j.X)
		y, errY := base64.RawURLEncoding.DecodeString(j.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return Key{}, errors.New("x and y are not base64url P-256 coordinates")
		}
		point := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
		if err != nil {
			return Key{}, errors.New("x and y are not a point on P-256")
		}
		return Key{ID: j.Kid, Alg: AlgES256, Public: pub}, nil
	case "":
		return Key{}, errors.New("no kty")
	default:
		return Key{}, fmt.Errorf("kty %q is not supported", j.Kty)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
