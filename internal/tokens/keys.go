// Package tokens verifies identity's access tokens for any service that
// accepts them: a cache of identity's token-verification key set (Cache)
// and a verifier over it (Verifier). The gateway, courier and the services
// to come share it.
//
// The cache exists because the public JWKS caches either hide an outage
// behind stale keys forever or answer 401 for it; this one keeps good keys
// for exactly the configured TTL, refreshes them in the background one fetch
// at a time, never lets a bad answer replace good keys, and reports its own
// state so a service can answer 503 for an outage and 401 only for a bad
// token.
package tokens

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-jose/go-jose/v4"
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

// members are the JWK members go-jose does not keep (key_ops) or that a
// published key must not carry (d), read beside its parse.
type members struct {
	Kty    string   `json:"kty"`
	Crv    string   `json:"crv"`
	D      string   `json:"d"`
	KeyOps []string `json:"key_ops"`
}

// ParseSet parses a JWKS document into its usable signing keys by kid. Keys
// this package cannot or must not use (no kid, not for signatures, private
// material published, symmetric, unsupported curve, alg inconsistent with
// the key type) are left out and reported in skipped. A document that is not
// a key set, or holds no usable key, is an error: the caller keeps the keys
// it had.
//
// Each entry is parsed by go-jose's JSONWebKey on its own rather than by
// unmarshalling a jose.JSONWebKeySet, which fails the whole set for one key
// it does not understand; RFC 7517 section 5 asks to ignore such a key.
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
		k, kid, err := parseKey(raw)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %v", i, kid, err))
			continue
		}
		if _, dup := keys[k.ID]; dup {
			// Two keys under one kid make the choice ambiguous; refuse both
			// rather than guess which one identity meant.
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): duplicate kid", i, kid))
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

// parseKey reads one JWK; kid is returned for the skip report even when
// the key is refused.
func parseKey(raw json.RawMessage) (Key, string, error) {
	var m members
	if err := json.Unmarshal(raw, &m); err != nil {
		return Key{}, "", errors.New("not a JSON object")
	}
	// Refused before go-jose parses: a published private key, and a key
	// type or curve this package never verifies with, whatever go-jose
	// would make of it.
	if m.D != "" {
		return Key{}, "", errors.New("private key material published")
	}
	switch {
	case m.Kty == "":
		return Key{}, "", errors.New("no kty")
	case m.Kty == "OKP" && m.Crv != "Ed25519":
		return Key{}, "", fmt.Errorf("OKP curve %q is not supported", m.Crv)
	case m.Kty == "EC" && m.Crv != "P-256":
		return Key{}, "", fmt.Errorf("EC curve %q is not supported", m.Crv)
	case m.Kty != "OKP" && m.Kty != "EC":
		return Key{}, "", fmt.Errorf("kty %q is not supported", m.Kty)
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil {
		return Key{}, "", fmt.Errorf("not a usable public key: %v", err)
	}
	kid := jwk.KeyID
	if kid == "" {
		return Key{}, kid, errors.New("no kid")
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return Key{}, kid, fmt.Errorf("use %q is not sig", jwk.Use)
	}
	if len(m.KeyOps) > 0 && !slices.Contains(m.KeyOps, "verify") {
		return Key{}, kid, errors.New("key_ops does not allow verify")
	}
	if !jwk.Valid() || !jwk.IsPublic() {
		return Key{}, kid, errors.New("not a valid public key")
	}
	switch pub := jwk.Key.(type) {
	case ed25519.PublicKey:
		if jwk.Algorithm != "" && jwk.Algorithm != AlgEdDSA {
			return Key{}, kid, fmt.Errorf("alg %q does not match an Ed25519 key", jwk.Algorithm)
		}
		return Key{ID: kid, Alg: AlgEdDSA, Public: pub}, kid, nil
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return Key{}, kid, errors.New("EC key is not on P-256")
		}
		if jwk.Algorithm != "" && jwk.Algorithm != AlgES256 {
			return Key{}, kid, fmt.Errorf("alg %q does not match a P-256 key", jwk.Algorithm)
		}
		return Key{ID: kid, Alg: AlgES256, Public: pub}, kid, nil
	default:
		return Key{}, kid, fmt.Errorf("key type %T is not supported", jwk.Key)
	}
}
