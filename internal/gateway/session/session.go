// Package session keeps the gateway's browser sessions in Redis: a random
// session id goes to the browser in a cookie, and the identity token it
// stands for stays server-side. Redis never holds anything usable on its
// own: the key is a digest of the session id and the value is the token
// sealed (AES-256-GCM) under a key derived from the session id, so a copy of
// Redis yields no token without the cookie that names it.
package session

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// idBytes is the session id's entropy.
const idBytes = 32

// ErrNotFound is a session id that names no live session (unknown, expired,
// ended or malformed).
var ErrNotFound = errors.New("session not found")

// Session is what a session id stands for.
type Session struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Store keeps sessions in Redis under keys starting with prefix.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, prefix string) *Store {
	return &Store{rdb: rdb, prefix: prefix}
}

// Create stores token until expiresAt under a new random session id and
// returns the id. Errors: Redis failures, and an expiresAt already past.
func (s *Store) Create(ctx context.Context, token string, expiresAt time.Time) (string, error) {
	ttl := time.Until(expiresAt)
	if ttl <= 0 {
		return "", errors.New("session: token already expired")
	}
	raw := make([]byte, idBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	value, err := seal(raw, s.key(raw), Session{Token: token, ExpiresAt: expiresAt.UTC()})
	if err != nil {
		return "", err
	}
	// NX: a collision of 256-bit ids cannot happen, and if it did the old
	// session must not be overwritten.
	ok, err := s.rdb.SetNX(ctx, s.key(raw), value, ttl).Result()
	if err != nil {
		return "", fmt.Errorf("session: storing: %w", err)
	}
	if !ok {
		return "", errors.New("session: id collision")
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// Get returns the session id names. Errors: ErrNotFound, Redis failures.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	raw, ok := decodeID(id)
	if !ok {
		return Session{}, ErrNotFound
	}
	value, err := s.rdb.Get(ctx, s.key(raw)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("session: reading: %w", err)
	}
	sess, err := open(raw, s.key(raw), value)
	if err != nil {
		// Not sealed under this id: treat as absent rather than fail.
		return Session{}, ErrNotFound
	}
	if !time.Now().Before(sess.ExpiresAt) {
		return Session{}, ErrNotFound
	}
	return sess, nil
}

// Delete ends the session id names; ending an absent session is not an
// error. Errors: Redis failures.
func (s *Store) Delete(ctx context.Context, id string) error {
	raw, ok := decodeID(id)
	if !ok {
		return nil
	}
	if err := s.rdb.Del(ctx, s.key(raw)).Err(); err != nil {
		return fmt.Errorf("session: deleting: %w", err)
	}
	return nil
}

// key is the Redis key for a session id: a digest, never the id itself.
func (s *Store) key(raw []byte) string {
	return s.prefix + "session:" + hex.EncodeToString(derive(raw, "gateway session lookup"))
}

func derive(raw []byte, label string) []byte {
	m := hmac.New(sha256.New, raw)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func decodeID(id string) ([]byte, bool) {
	if len(id) != base64.RawURLEncoding.EncodedLen(idBytes) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) != idBytes {
		return nil, false
	}
	return raw, true
}

func aead(raw []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(derive(raw, "gateway session seal"))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts sess under a key derived from the session id, bound to the
// Redis key so a value cannot be moved to another session.
func seal(raw []byte, key string, sess Session) ([]byte, error) {
	plain, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	a, err := aead(raw)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, plain, []byte(key)), nil
}

func open(raw []byte, key string, value []byte) (Session, error) {
	a, err := aead(raw)
	if err != nil {
		return Session{}, err
	}
	if len(value) < a.NonceSize() {
		return Session{}, errors.New("session value too short")
	}
	plain, err := a.Open(nil, value[:a.NonceSize()], value[a.NonceSize():], []byte(key))
	if err != nil {
		return Session{}, err
	}
	var sess Session
	if err := json.Unmarshal(plain, &sess); err != nil {
		return Session{}, err
	}
	return sess, nil
}
