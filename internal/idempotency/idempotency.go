// Package idempotency makes creating POSTs safe to retry: a request that
// carries an Idempotency-Key header is done once per (caller, key); a
// retry with the same body within the retention window replays the first
// response, a retry with a different body is refused, and a retry while
// the first is still running is told so. The layer sits after the
// service's authentication and authorization, so a replay is served only
// to a caller who may still make the request, and nothing is written for
// one who may not. On routes without a caller (sign-up), a record is found
// by key and body together: a stranger who guesses the key someone else
// will use makes a record of their own, not a refusal of that person's
// request. Records live in the service's own database, in the table
// idempotency_keys that each service's migrations create:
//
//	scope text, key_digest text, fingerprint text, status integer,
//	content_type text, location text, body bytea/BLOB,
//	created_at timestamp, completed_at timestamp,
//	PRIMARY KEY (scope, key_digest)
//
// A replayed body can hold a secret (an invitation or capability token),
// so the table keeps neither the key nor the body in the clear: a keyed
// digest of the key, and the body sealed (AES-256-GCM) with a key derived
// (HKDF-SHA256) from the service's secret and the Idempotency-Key, bound to
// the record's scope. The database alone, with a guessable key, opens
// nothing.
package idempotency

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/crypto/hkdf"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/sqldb"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// Retention is how long a completed response is replayed.
const Retention = 24 * time.Hour

// staleClaim is how long an unfinished claim blocks its key: a process
// that died mid-request must not block the key for a day.
const staleClaim = 2 * time.Minute

// Failure codes, answered through the service's own error envelope.
const (
	CodeReused     = "idempotency_key_reused"      // 422: same key, different request
	CodeInProgress = "idempotency_key_in_progress" // 409: the first request is still running
	CodeInvalid    = "idempotency_key_invalid"     // 400: malformed key
)

// Failure is how a service answers a refused request in its envelope.
type Failure func(w http.ResponseWriter, r *http.Request, status int, code, message string)

// SecretSize is the size of the service secret New takes.
const SecretSize = 32

// Store keeps idempotency records.
type Store struct {
	db     *sqldb.DB
	secret []byte
	digest []byte // the HMAC key of key digests, derived from secret
}

// New returns a store over db (whose schema has idempotency_keys) sealing
// with secret, the service's own key (IDENTITY_MASTER_KEY, BOX_MASTER_KEY)
// of SecretSize bytes; configuration checks its size, so any other size is
// a programming error and panics.
func New(db *sqldb.DB, secret []byte) *Store {
	if len(secret) != SecretSize {
		panic("idempotency: the secret must be 32 bytes")
	}
	s := &Store{db: db, secret: bytes.Clone(secret), digest: make([]byte, sha256.Size)}
	if _, err := io.ReadFull(hkdf.New(sha256.New, s.secret, nil, []byte("platform idempotency key digest")), s.digest); err != nil {
		panic(err) // HKDF-SHA256 gives up to 8,160 bytes
	}
	return s
}

type record struct {
	fingerprint string
	status      sql.NullInt64
	contentType sql.NullString
	location    sql.NullString
	body        []byte
	createdAt   time.Time
}

var (
	errReused     = errors.New("reused")
	errInProgress = errors.New("in progress")
)

// begin claims (scope, key) for fingerprint, or returns the completed
// record to replay. The claim is one INSERT … ON CONFLICT DO NOTHING, so
// of concurrent requests with one key exactly one does the work.
func (s *Store) begin(ctx context.Context, scope, digest, fingerprint string) (*record, error) {
	var replay *record
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `
			INSERT INTO idempotency_keys (scope, key_digest, fingerprint, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (scope, key_digest) DO NOTHING`, scope, digest, fingerprint, tx.Now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var rec record
		err = tx.QueryRow(ctx, `
			SELECT fingerprint, status, content_type, location, body, created_at
			FROM idempotency_keys WHERE scope = $1 AND key_digest = $2`+tx.DB().ForUpdate(), scope, digest).
			Scan(&rec.fingerprint, &rec.status, &rec.contentType, &rec.location, &rec.body, &rec.createdAt)
		if err != nil {
			return err
		}
		expired := rec.status.Valid && tx.Now.Sub(rec.createdAt) > Retention
		stale := !rec.status.Valid && tx.Now.Sub(rec.createdAt) > staleClaim
		switch {
		case expired || stale:
			// Take the key over for this request.
			_, err := tx.Exec(ctx, `
				UPDATE idempotency_keys SET fingerprint = $3, status = NULL, content_type = NULL,
					location = NULL, body = NULL, created_at = $4, completed_at = NULL
				WHERE scope = $1 AND key_digest = $2`, scope, digest, fingerprint, tx.Now)
			return err
		case rec.fingerprint != fingerprint:
			return errReused
		case !rec.status.Valid:
			return errInProgress
		default:
			replay = &rec
			return nil
		}
	})
	return replay, err
}

func (s *Store) complete(ctx context.Context, scope, digest string, status int, contentType, location string, body []byte) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `
			UPDATE idempotency_keys SET status = $3, content_type = $4, location = $5, body = $6, completed_at = $7
			WHERE scope = $1 AND key_digest = $2`, scope, digest, status, contentType, location, body, tx.Now)
		return err
	})
}

func (s *Store) abandon(ctx context.Context, scope, digest string) error {
	return s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key_digest = $2 AND status IS NULL`, scope, digest)
		return err
	})
}

// Wrap makes h idempotent for requests that carry the header. scope
// returns the authenticated caller (a user id), so Wrap goes inside the
// service's authentication and authorization, which run on every request,
// replays included; a scope of "" is a request without a caller, as
// WrapPublic. Responses below 500 are kept and replayed; a 5xx releases
// the key so a retry does the work again.
func (s *Store) Wrap(scope func(r *http.Request) string, fail Failure, h http.Handler) http.Handler {
	return s.wrap(scope, fail, h)
}

// WrapPublic is Wrap for a route without a caller: a record is found by
// the key and the request's digest together, so the same key with another
// body is another request rather than a refusal.
func (s *Store) WrapPublic(fail Failure, h http.Handler) http.Handler {
	return s.wrap(nil, fail, h)
}

func (s *Store) wrap(scope func(r *http.Request) string, fail Failure, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(Header)
		if key == "" {
			h.ServeHTTP(w, r)
			return
		}
		if !validKey(key) {
			fail(w, r, http.StatusBadRequest, CodeInvalid, "Idempotency-Key must be 1 to 255 visible ASCII characters")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpx.MaxBodyBytes+1))
		if err != nil || len(body) > httpx.MaxBodyBytes {
			fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "request body must not exceed 1048576 bytes")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var caller string
		if scope != nil {
			caller = scope(r)
		}
		fingerprint, sc := s.identify(caller, r.Method, r.URL.Path, body)
		digest, seal := s.derive(key, sc)

		replay, err := s.begin(r.Context(), sc, digest, fingerprint)
		switch {
		case errors.Is(err, errReused):
			fail(w, r, http.StatusUnprocessableEntity, CodeReused, "this Idempotency-Key was used with a different request")
			return
		case errors.Is(err, errInProgress):
			w.Header().Set("Retry-After", "1")
			fail(w, r, http.StatusConflict, CodeInProgress, "a request with this Idempotency-Key is still being processed")
			return
		case err != nil:
			fail(w, r, http.StatusInternalServerError, "internal", "an internal error occurred")
			return
		case replay != nil:
			body, err := seal.open(replay.body)
			if err != nil {
				fail(w, r, http.StatusInternalServerError, "internal", "an internal error occurred")
				return
			}
			replay.body = body
			if replay.contentType.String != "" {
				w.Header().Set("Content-Type", replay.contentType.String)
			}
			if replay.location.String != "" {
				w.Header().Set("Location", replay.location.String)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			// Replayed bodies can hold a secret (an invitation or a
			// capability token): never let a cache keep one.
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Length", strconv.Itoa(len(replay.body)))
			w.WriteHeader(int(replay.status.Int64))
			_, _ = w.Write(replay.body)
			return
		}

		rec := &capture{ResponseWriter: w}
		// Release the claim even if the handler panics.
		defer func() {
			ctx := context.WithoutCancel(r.Context())
			if rec.status == 0 || rec.status >= 500 {
				_ = s.abandon(ctx, sc, digest)
				return
			}
			_ = s.complete(ctx, sc, digest, rec.status, rec.Header().Get("Content-Type"), rec.Header().Get("Location"), seal.seal(rec.body.Bytes()))
		}()
		h.ServeHTTP(rec, r)
	})
}

// identify returns a request's fingerprint and the scope its record lives
// in: the caller's, or with no caller the fingerprint's own, so the body is
// part of what finds the record. The fingerprint is keyed like the key's
// digest: a sign-up body holds a password, which a plain hash in the table
// would let anyone with the database guess at.
func (s *Store) identify(caller, method, path string, body []byte) (fingerprint, scope string) {
	mac := hmac.New(sha256.New, s.digest)
	_, _ = io.WriteString(mac, "fingerprint\x00"+method+" "+path+"\n")
	mac.Write(body)
	fingerprint = hex.EncodeToString(mac.Sum(nil))
	if caller == "" {
		return fingerprint, "public:" + fingerprint
	}
	return fingerprint, "caller:" + caller
}

// Hold claims key for caller's request as a request still running does
// (caller "" is a route without one), so tests can show the in-progress
// answer without racing a real request.
func (s *Store) Hold(ctx context.Context, caller, key, method, path string, body []byte) error {
	fingerprint, scope := s.identify(caller, method, path, body)
	digest, _ := s.derive(key, scope)
	_, err := s.begin(ctx, scope, digest, fingerprint)
	return err
}

// sealer seals stored bodies with a key derived from the service secret
// and the Idempotency-Key, binding each to its record (scope and digest).
type sealer struct {
	aead cipher.AEAD
	ad   []byte
}

// derive returns the stored digest of key and the sealer of its bodies in
// scope. The digest is keyed too, so the table does not confirm a guessed
// key; the two derivations are domain-separated so one does not reveal the
// other.
func (s *Store) derive(key, scope string) (string, sealer) {
	mac := hmac.New(sha256.New, s.digest)
	_, _ = io.WriteString(mac, "key\x00"+key)
	d := hex.EncodeToString(mac.Sum(nil))
	k := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, s.secret, nil, []byte("platform idempotency body seal\x00"+key)), k); err != nil {
		panic(err) // HKDF-SHA256 gives up to 8,160 bytes
	}
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	return d, sealer{aead: aead, ad: []byte(scope + "\x00" + d)}
}

func (s sealer) seal(plain []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plain, s.ad)
}

func (s sealer) open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("idempotency: sealed body too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], s.ad)
}

func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// capture passes the response through and keeps a copy.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Purge deletes records older than the retention window; services call
// it periodically.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(tx *sqldb.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, tx.Now.Add(-Retention))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}
