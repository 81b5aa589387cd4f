package sqlstore_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

func jwtTime(t time.Time) *jwt.NumericDate { return jwt.NewNumericDate(t) }

// forgedToken builds a token over payload (base64url claims) with alg:
// "none" carries no signature; "HS256" is signed with the published public
// key as an HMAC secret (the algorithm-confusion attack).
func forgedToken(t *testing.T, alg, payload string, key identity.JWK) string {
	t.Helper()
	header, err := json.Marshal(map[string]string{"alg": alg, "typ": "JWT", "kid": key.Kid})
	if err != nil {
		t.Fatal(err)
	}
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + payload
	if alg == "none" {
		return signing + "."
	}
	secret, err := base64.RawURLEncoding.DecodeString(key.X)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// kidOf reads the kid header of a token without verifying it.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, &identity.Claims{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Method.Alg() != identity.AlgEdDSA {
		t.Errorf("token alg = %s, want EdDSA", tok.Method.Alg())
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}

func jwksKids(r *identity.KeyRing) []string {
	var out []string
	for _, k := range r.JWKS() {
		out = append(out, k.Kid)
	}
	return out
}

func TestKeyRotationAndWithdrawal(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		first := env.Ring.JWKS()
		if len(first) != 1 || first[0].Kty != "OKP" || first[0].Crv != "Ed25519" || first[0].Alg != "EdDSA" || first[0].Use != "sig" {
			t.Fatalf("first key set = %+v, want one Ed25519 signing key", first)
		}
		oldKID := first[0].Kid
		oldTok := env.Login(t, "ada@example.com")
		if kidOf(t, oldTok) != oldKID {
			t.Fatalf("token kid = %s, want %s", kidOf(t, oldTok), oldKID)
		}

		env.Clock.Advance(time.Second)
		k, err := env.Keys.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Ring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := jwksKids(env.Ring); len(got) != 2 || got[0] != k.KID || got[1] != oldKID {
			t.Fatalf("key set after rotate = %v, want [%s %s]", got, k.KID, oldKID)
		}
		newTok := env.Login(t, "ada@example.com")
		if kidOf(t, newTok) != k.KID {
			t.Errorf("token after rotate has kid %s, want %s", kidOf(t, newTok), k.KID)
		}
		env.Principal(t, oldTok, "")
		env.Principal(t, newTok, "")

		// The signer cannot be withdrawn; an unknown kid is not found.
		if err := env.Keys.Withdraw(ctx, k.KID); !errors.Is(err, identity.ErrKeyIsSigner) {
			t.Errorf("withdraw the signer: %v, want ErrKeyIsSigner", err)
		}
		if err := env.Keys.Withdraw(ctx, "no-such-kid"); !errors.Is(err, identity.ErrKeyNotFound) {
			t.Errorf("withdraw an unknown kid: %v, want ErrKeyNotFound", err)
		}

		// Withdrawing the old key refuses its tokens once the ring reloads.
		if err := env.Keys.Withdraw(ctx, oldKID); err != nil {
			t.Fatal(err)
		}
		if err := env.Keys.Withdraw(ctx, oldKID); err != nil {
			t.Errorf("withdrawing a withdrawn key again: %v, want a no-op", err)
		}
		if err := env.Ring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Service.Authenticate(ctx, oldTok, ""); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("token of a withdrawn key: %v, want ErrUnauthorized", err)
		}
		env.Principal(t, newTok, "")
		if got := jwksKids(env.Ring); len(got) != 1 || got[0] != k.KID {
			t.Errorf("key set after withdraw = %v, want [%s]", got, k.KID)
		}
		list, err := env.Keys.List(ctx)
		if err != nil || len(list) != 2 || list[1].WithdrawnAt == nil || list[0].WithdrawnAt != nil {
			t.Errorf("List = %+v, %v; want the signer and the withdrawn key", list, err)
		}
	})
}

// TestSealedKeys: the private key is stored sealed with the master key
// (AES-256-GCM, nonce first, the kid as associated data); the seed never
// appears in the row, and another master key cannot open it.
func TestSealedKeys(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		env.Register(t, "ada@example.com")
		tok := env.Login(t, "ada@example.com")

		var (
			kid            string
			public, sealed []byte
		)
		if err := env.DB.QueryRow(ctx, `SELECT kid, public_key, private_key_sealed FROM signing_keys`).Scan(&kid, &public, &sealed); err != nil {
			t.Fatal(err)
		}
		block, err := aes.NewCipher(env.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			t.Fatal(err)
		}
		n := aead.NonceSize()
		seed, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(kid))
		if err != nil {
			t.Fatalf("the sealed key does not open with the master key: %v", err)
		}
		priv := ed25519.NewKeyFromSeed(seed)
		if !bytes.Equal(priv.Public().(ed25519.PublicKey), public) {
			t.Fatal("the sealed seed does not belong to the stored public key")
		}
		if bytes.Contains(sealed, seed) || bytes.Contains(sealed, priv) {
			t.Error("the stored private key holds the seed in the clear")
		}
		if _, err := aead.Open(nil, sealed[:n], sealed[n:], []byte("another-kid")); err == nil {
			t.Error("the sealed key opens under another kid")
		}
		// The token was signed by that key.
		if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return ed25519.PublicKey(public), nil }, jwt.WithValidMethods([]string{"EdDSA"})); err != nil {
			t.Errorf("token does not verify with the stored public key: %v", err)
		}

		wrong := make([]byte, 32)
		if _, err := rand.Read(wrong); err != nil {
			t.Fatal(err)
		}
		keys, err := identity.NewKeys(env.Store, wrong)
		if err != nil {
			t.Fatal(err)
		}
		if err := identity.NewKeyRing(keys).Refresh(ctx); err == nil {
			t.Error("a ring with the wrong master key loaded the signer")
		}
		if _, err := identity.NewKeys(env.Store, wrong[:16]); err == nil {
			t.Error("NewKeys accepted a 16-byte master key")
		}
	})
}

// TestRingPicksUpAnotherProcessRotation: a rotation made elsewhere (the
// keys command) reaches a running ring on its next refresh.
func TestRingPicksUpAnotherProcessRotation(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identitytest.New(t, engine, identitytest.Config{})
		cli, err := identity.NewKeys(env.Store, env.MasterKey)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Second)
		k, err := cli.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env.Register(t, "ada@example.com")
		if kid := kidOf(t, env.Login(t, "ada@example.com")); kid == k.KID {
			t.Fatal("the ring used the new key before refreshing")
		}
		if err := env.Ring.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if kid := kidOf(t, env.Login(t, "ada@example.com")); kid != k.KID {
			t.Errorf("after refresh tokens carry kid %s, want %s", kid, k.KID)
		}
	})
}
