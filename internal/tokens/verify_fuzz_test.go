package tokens_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/tokens"
	"github.com/platformco/platform/internal/tokens/tokenstest"
)

// oneKey is a loaded key set holding one Ed25519 key.
type oneKey struct{ key tokens.Key }

func (k oneKey) Status(time.Time) tokens.Status { return tokens.Status{Usable: true, Loaded: true} }
func (k oneKey) Lookup(kid string, _ time.Time) (tokens.Key, bool) {
	return k.key, kid == k.key.ID
}
func (k oneKey) RefreshEarly(context.Context) bool { return false }
func (k oneKey) Check(context.Context) error       { return nil }

// FuzzVerify: whatever the bearer token, the verifier answers claims or
// the one invalid-token error, never a panic; and mutating a valid token
// (which the fuzzer does from the seeds) never yields different claims.
func FuzzVerify(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	const issuer = "http://identity.test"
	v := tokens.NewVerifier(oneKey{tokens.Key{ID: "k1", Alg: tokens.AlgEdDSA, Public: pub}}, issuer)
	claims := func(mut func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": issuer, "sub": "u1", "sid": "s1", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	good := tokenstest.Sign(f, tokens.AlgEdDSA, "k1", priv, claims(nil))
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	seeds := []string{
		good,
		tokenstest.Sign(f, tokens.AlgEdDSA, "k1", otherPriv, claims(nil)),
		tokenstest.Sign(f, tokens.AlgEdDSA, "k1", priv, claims(func(c jwt.MapClaims) { c["iss"] = "http://evil.test" })),
		tokenstest.Sign(f, tokens.AlgEdDSA, "k1", priv, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		tokenstest.Sign(f, tokens.AlgEdDSA, "k1", priv, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		tokenstest.Sign(f, tokens.AlgEdDSA, "k2", priv, claims(nil)),
		tokenstest.Sign(f, tokens.AlgEdDSA, "", priv, claims(nil)),
		none, "", ".", "..", "a.b.c", "eyJhbGciOiJub25lIn0..", strings.Repeat("A", 4096),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(context.Background(), token)
		if err != nil {
			if errs.Code(err) != tokens.CodeInvalidToken {
				t.Fatalf("Verify(%q): %v, want %s", token, err, tokens.CodeInvalidToken)
			}
			return
		}
		if c.Subject != "u1" || c.SessionID != "s1" {
			t.Fatalf("Verify(%q) accepted claims %+v that were never signed", token, c)
		}
	})
}
