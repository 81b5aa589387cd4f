package identity

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/tokencache"
)

// AlgEdDSA is the one signing algorithm identity uses; verification is
// pinned to it.
const AlgEdDSA = "EdDSA"

// SigningKey is a token-signing key as stored: the private half sealed
// with the master key.
type SigningKey struct {
	KID         string
	Algorithm   string
	Public      []byte
	Sealed      []byte
	CreatedAt   time.Time
	WithdrawnAt *time.Time
}

// KeyStore keeps signing keys.
type KeyStore interface {
	// SigningKeys returns every key, newest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// InsertSigningKey stores a new key; its CreatedAt is the store's now.
	InsertSigningKey(ctx context.Context, k SigningKey) (SigningKey, error)
	// WithdrawSigningKey marks a key withdrawn, refusing the newest usable
	// key (the signer). Errors: ErrKeyNotFound, ErrKeyIsSigner.
	WithdrawSigningKey(ctx context.Context, kid string) error
}

// Key management errors.
var (
	ErrKeyNotFound = errs.New(CodeNotFound, "no signing key has that id")
	ErrKeyIsSigner = errs.New(CodeConflict, "that key is the current signer; rotate first, then withdraw it")
)

// Keys generates, seals and manages signing keys.
type Keys struct {
	store KeyStore
	aead  cipher.AEAD
}

// NewKeys returns key management sealing private keys with master, which
// must be 32 bytes (AES-256-GCM).
func NewKeys(store KeyStore, master []byte) (*Keys, error) {
	if len(master) != 32 {
		return nil, errors.New("master key must be 32 bytes")
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Keys{store: store, aead: aead}, nil
}

// Rotate generates a new key and makes it the signer. Earlier keys stay
// published until withdrawn, so tokens they signed keep verifying.
func (k *Keys) Rotate(ctx context.Context) (SigningKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return SigningKey{}, err
	}
	kidBytes := make([]byte, 12)
	if _, err := rand.Read(kidBytes); err != nil {
		return SigningKey{}, err
	}
	kid := base64.RawURLEncoding.EncodeToString(kidBytes)
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return SigningKey{}, err
	}
	// The kid is authenticated data: a sealed key moved to another row
	// does not open.
	sealed := k.aead.Seal(nonce, nonce, priv.Seed(), []byte(kid))
	return k.store.InsertSigningKey(ctx, SigningKey{KID: kid, Algorithm: AlgEdDSA, Public: pub, Sealed: sealed})
}

// Withdraw removes a key from the key set; tokens it signed are refused
// from then on. Errors: ErrKeyNotFound, ErrKeyIsSigner.
func (k *Keys) Withdraw(ctx context.Context, kid string) error {
	return k.store.WithdrawSigningKey(ctx, kid)
}

// List returns every key, newest first.
func (k *Keys) List(ctx context.Context) ([]SigningKey, error) { return k.store.SigningKeys(ctx) }

func (k *Keys) open(sk SigningKey) (ed25519.PrivateKey, error) {
	n := k.aead.NonceSize()
	if len(sk.Sealed) < n {
		return nil, errors.New("sealed key too short")
	}
	seed, err := k.aead.Open(nil, sk.Sealed[:n], sk.Sealed[n:], []byte(sk.KID))
	if err != nil {
		return nil, fmt.Errorf("key %s does not open with IDENTITY_MASTER_KEY", sk.KID)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("sealed key has the wrong size")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// KeyRing is a running service's view of the keys: the signer and every
// published public key. Refresh reloads it; Run refreshes it in the
// background so rotations and withdrawals take effect without a restart.
type KeyRing struct {
	keys *Keys

	mu        sync.RWMutex
	signerKID string
	signer    ed25519.PrivateKey
	public    map[string]ed25519.PublicKey
	order     []string // kids, newest first

	// verified spares repeated Ed25519 verifications of the same token;
	// an entry dies with its key (withdrawal) or its expiry.
	verified *tokencache.Cache[Claims]
}

// verifiedTokens bounds the cache of verified tokens.
const verifiedTokens = 8192

// NewKeyRing returns an empty ring; call Refresh before use.
func NewKeyRing(keys *Keys) *KeyRing {
	return &KeyRing{keys: keys, verified: tokencache.New[Claims](verifiedTokens)}
}

// publicKey returns the published key named kid.
func (r *KeyRing) publicKey(kid string) (crypto.PublicKey, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	key, ok := r.public[kid]
	return key, ok
}

// Refresh loads the keys. When no usable key exists it creates the first
// one, so a fresh database needs no extra step.
func (r *KeyRing) Refresh(ctx context.Context) error {
	all, err := r.keys.List(ctx)
	if err != nil {
		return err
	}
	usable := all[:0:0]
	for _, k := range all {
		if k.WithdrawnAt == nil && k.Algorithm == AlgEdDSA && len(k.Public) == ed25519.PublicKeySize {
			usable = append(usable, k)
		}
	}
	if len(usable) == 0 {
		k, err := r.keys.Rotate(ctx)
		if err != nil {
			return fmt.Errorf("create first signing key: %w", err)
		}
		usable = append(usable, k)
	}
	public := make(map[string]ed25519.PublicKey, len(usable))
	order := make([]string, 0, len(usable))
	for _, k := range usable {
		public[k.KID] = ed25519.PublicKey(k.Public)
		order = append(order, k.KID)
	}
	newest := usable[0]
	r.mu.RLock()
	sameSigner := r.signerKID == newest.KID
	signer := r.signer
	r.mu.RUnlock()
	if !sameSigner {
		if signer, err = r.keys.open(newest); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.signerKID, r.signer, r.public, r.order = newest.KID, signer, public, order
	r.mu.Unlock()
	return nil
}

// Run refreshes the ring every interval until ctx is done.
func (r *KeyRing) Run(ctx context.Context, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("signing keys: refresh failed; keeping the last good set", "err", err)
			}
		}
	}
}

// JWK is one public key of the key set (RFC 8037 for Ed25519).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the published key set, newest first.
func (r *KeyRing) JWKS() []JWK {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]JWK, 0, len(r.order))
	for _, kid := range r.order {
		out = append(out, JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(r.public[kid]), Kid: kid, Alg: AlgEdDSA, Use: "sig"})
	}
	return out
}

// Claims are the claims of an identity token.
type Claims struct {
	jwt.RegisteredClaims
	SID string `json:"sid"`
}

// Sign signs claims with the current signer.
func (r *KeyRing) Sign(c Claims) (string, error) {
	r.mu.RLock()
	kid, key := r.signerKID, r.signer
	r.mu.RUnlock()
	if key == nil {
		return "", errors.New("no signing key loaded")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = kid
	return t.SignedString(key)
}

// Verify checks a token's signature against a published key (pinned to
// EdDSA), its issuer and its expiry on the clock now, and returns its
// claims. Errors: ErrUnauthorized.
func (r *KeyRing) Verify(token, issuer string, now func() time.Time) (Claims, error) {
	if c, ok := r.verified.Get(token, now(), r.publicKey); ok && c.Issuer == issuer {
		return c, nil
	}
	var (
		c       Claims
		usedKID string
		usedKey crypto.PublicKey
	)
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, ok := r.publicKey(kid)
		if !ok {
			return nil, errors.New("unknown or withdrawn key")
		}
		usedKID, usedKey = kid, key
		return key, nil
	},
		jwt.WithValidMethods([]string{AlgEdDSA}),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(now),
	)
	if err != nil || c.Subject == "" || c.SID == "" {
		return Claims{}, ErrUnauthorized
	}
	r.verified.Put(token, c, usedKID, usedKey, c.ExpiresAt.Add(5*time.Second))
	return c, nil
}
