// Package tokenstest serves a controllable identity key set and mints
// tokens with its keys, for tests of anything that verifies identity's
// access tokens (the gateway, courier).
package tokenstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Mode is how the key server answers.
type Mode int

// Key server modes.
const (
	Serve   Mode = iota // 200 with the published keys
	Fail                // 500
	Garbage             // 200 with a body that is not a key set
)

// Key is a signing key the server may publish.
type Key struct {
	ID      string
	Alg     string // "EdDSA" or "ES256"
	Private crypto.Signer
}

// KeyServer is an httptest server answering /.well-known/jwks.json.
type KeyServer struct {
	*httptest.Server
	mu        sync.Mutex
	keys      map[string]Key
	published []string
	mode      Mode
	hits      atomic.Int64
	// Issuer is the server's URL, which tokens carry as iss.
	Issuer string
}

// NewKeyServer starts a key server publishing one Ed25519 key "k1"; it is
// closed when the test ends. Extra handlers (for example identity's routes)
// can be added to mux before requests arrive; nil is allowed.
func NewKeyServer(t testing.TB, mux *http.ServeMux) *KeyServer {
	t.Helper()
	if mux == nil {
		mux = http.NewServeMux()
	}
	ks := &KeyServer{keys: map[string]Key{}}
	mux.HandleFunc("GET /.well-known/jwks.json", ks.serveKeys)
	ks.Server = httptest.NewServer(mux)
	ks.Issuer = ks.URL
	t.Cleanup(ks.Close)
	ks.Publish(ks.AddKey(t, "k1", "EdDSA"))
	return ks
}

// AddKey creates a key with id and alg ("EdDSA" or "ES256") without
// publishing it.
func (ks *KeyServer) AddKey(t testing.TB, id, alg string) string {
	t.Helper()
	k := Key{ID: id, Alg: alg, Private: NewSigner(t, alg)}
	ks.mu.Lock()
	ks.keys[id] = k
	ks.mu.Unlock()
	return id
}

// NewSigner returns a fresh private key for alg.
func NewSigner(t testing.TB, alg string) crypto.Signer {
	t.Helper()
	switch alg {
	case "EdDSA":
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return priv
	case "ES256":
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return priv
	}
	t.Fatalf("unsupported alg %q", alg)
	return nil
}

// Publish sets the published key set to exactly kids.
func (ks *KeyServer) Publish(kids ...string) {
	ks.mu.Lock()
	ks.published = append([]string(nil), kids...)
	ks.mu.Unlock()
}

// SetMode changes how the server answers.
func (ks *KeyServer) SetMode(m Mode) {
	ks.mu.Lock()
	ks.mode = m
	ks.mu.Unlock()
}

// Hits returns how many key-set requests the server has received.
func (ks *KeyServer) Hits() int64 { return ks.hits.Load() }

// JWKSURL is where the key set is served.
func (ks *KeyServer) JWKSURL() string { return ks.URL + "/.well-known/jwks.json" }

func (ks *KeyServer) serveKeys(w http.ResponseWriter, r *http.Request) {
	ks.hits.Add(1)
	ks.mu.Lock()
	mode := ks.mode
	var set []map[string]string
	for _, kid := range ks.published {
		set = append(set, PublicJWK(ks.keys[kid]))
	}
	ks.mu.Unlock()
	switch mode {
	case Fail:
		http.Error(w, "down", http.StatusInternalServerError)
	case Garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`<html>maintenance</html>`))
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}
}

// PublicJWK renders k's public half as identity publishes it.
func PublicJWK(k Key) map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := k.Private.Public().(type) {
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(pub), "kid": k.ID, "alg": "EdDSA", "use": "sig"}
	case *ecdsa.PublicKey:
		raw, _ := pub.Bytes()
		return map[string]string{"kty": "EC", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:]), "kid": k.ID, "alg": "ES256", "use": "sig"}
	}
	return nil
}

// Key returns the key named kid.
func (ks *KeyServer) Key(kid string) Key {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.keys[kid]
}

// Claims returns identity-shaped claims for sub, issued now by ks and
// expiring in ttl.
func (ks *KeyServer) Claims(sub string, ttl time.Duration) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": ks.Issuer,
		"sub": sub,
		"sid": "5f0c6c36-3a8e-4a4e-9d55-8f1f0e5d2a11",
		"iat": now.Unix(),
		"exp": now.Add(ttl).Unix(),
	}
}

// Token signs claims with the key named kid.
func (ks *KeyServer) Token(t testing.TB, kid string, claims jwt.MapClaims) string {
	t.Helper()
	k := ks.Key(kid)
	if k.Private == nil {
		t.Fatalf("no key %q", kid)
	}
	return Sign(t, k.Alg, kid, k.Private, claims)
}

// Sign signs claims with priv under alg, naming kid in the header.
func Sign(t testing.TB, alg, kid string, priv crypto.Signer, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
