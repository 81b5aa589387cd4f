// Package license reads and checks the licence files the platform's
// entitlement service issues to an installation of a unit, so the software
// running at a customer can check its licence offline.
//
// A licence file is the text
//
//	-----BEGIN PLATFORM LICENSE-----
//	<base64 of a compact JWS, wrapped at 64 characters>
//	-----END PLATFORM LICENSE-----
//
// whose JWS is signed with Ed25519 (alg "EdDSA") by one of the service's
// licence keys, named by the header's "kid". The service publishes its
// public keys as a JWK set at GET /v1/license/keys; a copy shipped with the
// software, or fetched once and kept, is all Verify needs.
//
// The package imports only the standard library, so any Go program can use
// it.
package license

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The lines that enclose a licence file's body.
const (
	BeginLine = "-----BEGIN PLATFORM LICENSE-----"
	EndLine   = "-----END PLATFORM LICENSE-----"
)

// Algorithm is the JWS algorithm of every licence.
const Algorithm = "EdDSA"

// The reasons Verify refuses a licence; test with errors.Is.
var (
	// ErrMalformed: not a licence file (missing lines, bad base64, not a
	// compact JWS, unreadable claims, another algorithm), or a truncated
	// one.
	ErrMalformed = errors.New("license: malformed licence file")
	// ErrUnknownKey: the licence names a key the key set does not hold.
	ErrUnknownKey = errors.New("license: signed by a key not in the key set")
	// ErrSignature: the signature does not match (the licence was altered).
	ErrSignature = errors.New("license: signature does not verify")
	// ErrExpired: the licence's exp has passed.
	ErrExpired = errors.New("license: licence has expired")
	// ErrNotYetValid: the licence was issued after Options.Now.
	ErrNotYetValid = errors.New("license: licence is not valid yet")
	// ErrFingerprint: the licence belongs to another installation.
	ErrFingerprint = errors.New("license: licence is for another fingerprint")
	// ErrVersion: the version is outside the licence's version range.
	ErrVersion = errors.New("license: version not covered by the licence")
)

// Claims are a licence's contents.
type Claims struct {
	// Issuer is the entitlement service's public URL.
	Issuer string `json:"iss"`
	// Subject is the installation's id.
	Subject     string `json:"sub"`
	AccountID   string `json:"account_id"`
	AccountName string `json:"account_name"`
	// Product is the licensed unit: kit, platform, identity or courier.
	Product string `json:"product"`
	// VersionRange is ^X.Y.Z, ~X.Y.Z, >=X.Y.Z or X.Y.Z; nil admits every
	// version.
	VersionRange  *string `json:"version_range"`
	Fingerprint   string  `json:"fingerprint"`
	EntitlementID int64   `json:"entitlement_id"`
	// IssuedAt and ExpiresAt are Unix times in seconds; the software
	// renews its licence before ExpiresAt.
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
}

// Key is one public licence key.
type Key struct {
	ID     string
	Public ed25519.PublicKey
}

// KeySet is the set of public keys a licence may be signed with.
type KeySet struct {
	Keys []Key
}

type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// ParseKeySet reads a JWK set ({"keys": [...]}); keys other than Ed25519
// ("kty": "OKP", "crv": "Ed25519") are skipped. It fails when no usable
// key remains.
func ParseKeySet(data []byte) (KeySet, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return KeySet{}, fmt.Errorf("license: key set is not a JWK set: %w", err)
	}
	var ks KeySet
	for _, k := range doc.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid == "" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return KeySet{}, fmt.Errorf("license: key %q: x is not a base64url Ed25519 public key", k.Kid)
		}
		ks.Keys = append(ks.Keys, Key{ID: k.Kid, Public: ed25519.PublicKey(x)})
	}
	if len(ks.Keys) == 0 {
		return KeySet{}, errors.New("license: key set holds no Ed25519 key")
	}
	return ks, nil
}

// MarshalJSON writes the set as a JWK set.
func (ks KeySet) MarshalJSON() ([]byte, error) {
	doc := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(ks.Keys))}
	for _, k := range ks.Keys {
		doc.Keys = append(doc.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.Public), Kid: k.ID, Alg: Algorithm, Use: "sig"})
	}
	return json.Marshal(doc)
}

func (ks KeySet) key(kid string) (ed25519.PublicKey, bool) {
	for _, k := range ks.Keys {
		if k.ID == kid {
			return k.Public, true
		}
	}
	return nil, false
}

// KeyID is the RFC 7638 thumbprint of an Ed25519 public key, the kid the
// service gives it: a key's id follows from the key, so rotating keys
// never reuses one.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ,omitempty"`
}

// Sign returns the licence file of claims signed with key; the header's
// kid is KeyID of its public half. The entitlement service calls it;
// customers' software only verifies.
func Sign(claims Claims, key ed25519.PrivateKey) ([]byte, error) {
	h, err := json.Marshal(header{Alg: Algorithm, Kid: KeyID(key.Public().(ed25519.PublicKey)), Typ: "platform-license+jwt"})
	if err != nil {
		return nil, err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return nil, err
	}
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	jws := input + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(input)))
	body := base64.StdEncoding.EncodeToString([]byte(jws))
	var b bytes.Buffer
	b.WriteString(BeginLine + "\n")
	for len(body) > 64 {
		b.WriteString(body[:64] + "\n")
		body = body[64:]
	}
	b.WriteString(body + "\n" + EndLine + "\n")
	return b.Bytes(), nil
}

// JWS returns the compact JWS inside a licence file, unverified.
// Errors: ErrMalformed.
func JWS(file []byte) (string, error) {
	text := strings.TrimSpace(string(file))
	body, ok := strings.CutPrefix(text, BeginLine)
	if !ok {
		return "", fmt.Errorf("%w: no %s line", ErrMalformed, BeginLine)
	}
	body, ok = strings.CutSuffix(body, EndLine)
	if !ok {
		return "", fmt.Errorf("%w: no %s line (truncated?)", ErrMalformed, EndLine)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return "", fmt.Errorf("%w: body is not base64", ErrMalformed)
	}
	if strings.Count(string(raw), ".") != 2 {
		return "", fmt.Errorf("%w: body is not a compact JWS", ErrMalformed)
	}
	return string(raw), nil
}

// Options are what a licence is checked against. Empty fields are not
// checked; a zero Now means time.Now().
type Options struct {
	// Fingerprint is the running installation's fingerprint.
	Fingerprint string
	// Version is the running software's version, X.Y.Z.
	Version string
	// Now is the time to check exp and iat against.
	Now time.Time
}

// Verify checks a licence file: its signature by a key of keys (by the
// header's kid), its validity at opts.Now, and, when given, the
// fingerprint and the version against the licence's range. It returns
// the claims of a valid licence; otherwise an error wrapping one of
// ErrMalformed, ErrUnknownKey, ErrSignature, ErrExpired, ErrNotYetValid,
// ErrFingerprint or ErrVersion.
func Verify(file []byte, keys KeySet, opts Options) (*Claims, error) {
	jws, err := JWS(file)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(jws, ".")
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("%w: a JWS part is not base64url", ErrMalformed)
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("%w: unreadable header", ErrMalformed)
	}
	if h.Alg != Algorithm {
		return nil, fmt.Errorf("%w: algorithm %q, want %s", ErrMalformed, h.Alg, Algorithm)
	}
	pub, ok := keys.key(h.Kid)
	if !ok {
		return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, h.Kid)
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, ErrSignature
	}
	var c Claims
	if err := json.Unmarshal(cb, &c); err != nil {
		return nil, fmt.Errorf("%w: unreadable claims", ErrMalformed)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch {
	case now.Unix() >= c.ExpiresAt:
		return nil, fmt.Errorf("%w: at %s", ErrExpired, time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	case now.Unix() < c.IssuedAt:
		return nil, fmt.Errorf("%w: issued at %s", ErrNotYetValid, time.Unix(c.IssuedAt, 0).UTC().Format(time.RFC3339))
	case opts.Fingerprint != "" && opts.Fingerprint != c.Fingerprint:
		return nil, fmt.Errorf("%w: licensed to %q", ErrFingerprint, c.Fingerprint)
	}
	if opts.Version != "" && c.VersionRange != nil {
		ok, err := admits(*c.VersionRange, opts.Version)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s is outside %s", ErrVersion, opts.Version, *c.VersionRange)
		}
	}
	return &c, nil
}
