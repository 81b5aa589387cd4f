package tokens

import (
	"context"
	"crypto"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/tokencache"
)

// Leeway is the clock skew allowed on exp, nbf and iat.
const Leeway = 30 * time.Second

// KeySource is the key-set cache the verifier reads.
type KeySource interface {
	Status(now time.Time) Status
	Lookup(kid string, now time.Time) (Key, bool)
	RefreshEarly(ctx context.Context) bool
	// Check reports whether the key set can be fetched now (readiness).
	Check(ctx context.Context) error
}

var _ KeySource = (*Cache)(nil)

// The codes of the verifier's errors (*errs.Error); a service renders
// them in its own envelope.
const (
	// CodeInvalidToken is everything wrong with the token itself: bad
	// signature, wrong issuer, expired, unknown key, wrong alg (401).
	CodeInvalidToken = "invalid_token"
	// CodeKeysUnavailable is identity's key set never loaded or expired:
	// no token can be judged, so the caller answers 503.
	CodeKeysUnavailable = "identity_unavailable"
)

// Claims is what a service takes from a verified token.
type Claims struct {
	Subject   string
	SessionID string
	ExpiresAt time.Time
}

type tokenClaims struct {
	jwt.RegisteredClaims
	SessionID string `json:"sid"`
}

// Verifier checks identity's access tokens against the cached key set.
// It is safe for concurrent use.
type Verifier struct {
	keys   KeySource
	parser *jwt.Parser

	// verified spares repeated signature checks of the same token; an
	// entry dies with its key or its expiry.
	verified *tokencache.Cache[Claims]
}

// NewVerifier returns a verifier expecting iss = issuer.
func NewVerifier(keys KeySource, issuer string) *Verifier {
	return &Verifier{
		keys: keys,
		parser: jwt.NewParser(
			// The global list only narrows what reaches the keyfunc; the
			// keyfunc then pins the algorithm to the one the key declares.
			jwt.WithValidMethods([]string{AlgEdDSA, AlgES256}),
			jwt.WithIssuer(issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(Leeway),
		),
		verified: tokencache.New[Claims](8192),
	}
}

var errInvalidToken = errs.New(CodeInvalidToken, "the access token is invalid or expired")

const msgKeysDown = "identity's signing keys are unavailable; try again shortly"

// Verify checks token and returns its claims. Whether the key set can be
// used is decided first, from the cache's state alone, so nothing in a
// token can turn an outage into a 401 or a bad token into a 503.
// Errors: CodeKeysUnavailable, with RetryAfter set to the next fetch,
// when the key set was never loaded or has expired; CodeInvalidToken for
// everything wrong with the token itself.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	now := time.Now()
	if st := v.keys.Status(now); !st.Usable {
		return Claims{}, &errs.Error{Code: CodeKeysUnavailable, Message: msgKeysDown, RetryAfter: st.RetryAfter}
	}
	lookup := func(kid string) (crypto.PublicKey, bool) {
		key, ok := v.keys.Lookup(kid, now)
		return key.Public, ok
	}
	if c, ok := v.verified.Get(token, now, lookup); ok {
		return c, nil
	}
	var (
		claims  tokenClaims
		usedKey Key
	)
	_, err := v.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("token has no kid")
		}
		key, ok := v.keys.Lookup(kid, time.Now())
		if !ok && v.keys.RefreshEarly(ctx) {
			key, ok = v.keys.Lookup(kid, time.Now())
		}
		if !ok {
			return nil, errors.New("unknown kid")
		}
		if t.Method.Alg() != key.Alg {
			return nil, errors.New("token alg differs from the key's declared alg")
		}
		usedKey = key
		return key.Public, nil
	})
	if err != nil {
		return Claims{}, errInvalidToken
	}
	if claims.Subject == "" || claims.ExpiresAt == nil {
		return Claims{}, errInvalidToken
	}
	c := Claims{Subject: claims.Subject, SessionID: claims.SessionID, ExpiresAt: claims.ExpiresAt.Time}
	v.verified.Put(token, c, usedKey.ID, usedKey.Public, c.ExpiresAt.Add(Leeway))
	return c, nil
}
