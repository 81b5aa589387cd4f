package keyholder_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// clockedStore is the real store with a clock the test moves, and a count
// of credential lookups.
type clockedStore struct {
	*sqlstore.Store
	mu      sync.Mutex
	now     time.Time
	lookups int
}

func (s *clockedStore) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *clockedStore) advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

func (s *clockedStore) Credential(ctx context.Context, id string) (keyholder.Credential, error) {
	s.mu.Lock()
	s.lookups++
	s.mu.Unlock()
	return s.Store.Credential(ctx, id)
}

func (s *clockedStore) lookupCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

const testAccount = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"

// issue stores a credential living ttl and returns it with its password.
func issue(t *testing.T, s *clockedStore, ttl time.Duration) (keyholder.Credential, string) {
	t.Helper()
	password := "khp_" + uuid.NewString()
	sum := sha256.Sum256([]byte(password))
	now := s.Now()
	c, err := s.CreateCredential(context.Background(), keyholder.Credential{
		ID: uuid.NewString(), PasswordDigest: hex.EncodeToString(sum[:]), AccountID: testAccount, Repository: "platform",
		CreatedAt: now, ExpiresAt: now.Add(ttl),
	})
	if err != nil {
		t.Fatalf("CreateCredential: %v", err)
	}
	return c, password
}

// TestCheckedCredentials: a credential found live is trusted for a
// bounded time without a database lookup, and that never lets through
// what the database would refuse: a wrong password, an expiry, a
// revocation here (at once) or at another keyholder (within the bound).
func TestCheckedCredentials(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		db := sqltest.Open(t, engine, sqlstore.Migrations)
		newStore := func() *clockedStore {
			return &clockedStore{Store: sqlstore.New(db), now: time.Now().UTC().Truncate(time.Microsecond)}
		}
		ctx := context.Background()
		refused := func(t *testing.T, svc *keyholder.Service, c keyholder.Credential, pass string) {
			t.Helper()
			if _, err := svc.Authenticate(ctx, c.Username(), pass); errs.Code(err) != keyholder.CodeUnauthenticated {
				t.Fatalf("Authenticate: got %v, want %s", err, keyholder.CodeUnauthenticated)
			}
		}
		accepted := func(t *testing.T, svc *keyholder.Service, c keyholder.Credential, password string) {
			t.Helper()
			got, err := svc.Authenticate(ctx, c.Username(), password)
			if err != nil || got.ID != c.ID {
				t.Fatalf("Authenticate: got %+v %v, want %s", got, err, c.ID)
			}
		}

		t.Run("OKRepeatsWithoutLookup", func(t *testing.T) {
			s := newStore()
			svc := keyholder.NewService(s, nil, time.Hour, "registry.example.com")
			c, password := issue(t, s, time.Hour)
			for range 5 {
				accepted(t, svc, c, password)
			}
			if n := s.lookupCount(); n != 1 {
				t.Errorf("lookups: got %d, want 1", n)
			}
			s.advance(keyholder.CheckedCredentialTTL)
			accepted(t, svc, c, password)
			if n := s.lookupCount(); n != 2 {
				t.Errorf("lookups after the bound: got %d, want 2", n)
			}
		})
		t.Run("ErrWrongPasswordOfCheckedCredential", func(t *testing.T) {
			s := newStore()
			svc := keyholder.NewService(s, nil, time.Hour, "registry.example.com")
			c, password := issue(t, s, time.Hour)
			accepted(t, svc, c, password)
			refused(t, svc, c, "khp_wrong")
			refused(t, svc, c, "")
		})
		t.Run("ErrExpiresWhileChecked", func(t *testing.T) {
			s := newStore()
			svc := keyholder.NewService(s, nil, time.Hour, "registry.example.com")
			c, password := issue(t, s, time.Second)
			accepted(t, svc, c, password)
			s.advance(time.Second)
			refused(t, svc, c, password)
		})
		t.Run("ErrRevokedHereAtOnce", func(t *testing.T) {
			s := newStore()
			svc := keyholder.NewService(s, nil, time.Hour, "registry.example.com")
			c, password := issue(t, s, time.Hour)
			accepted(t, svc, c, password)
			if err := svc.Revoke(ctx, c.Username(), password); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			refused(t, svc, c, password)
		})
		t.Run("ErrRevokedElsewhereWithinBound", func(t *testing.T) {
			s := newStore()
			here := keyholder.NewService(s, nil, time.Hour, "registry.example.com")
			there := keyholder.NewService(newStore(), nil, time.Hour, "registry.example.com")
			c, password := issue(t, s, time.Hour)
			accepted(t, here, c, password)
			if err := there.Revoke(ctx, c.Username(), password); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			s.advance(keyholder.CheckedCredentialTTL)
			refused(t, here, c, password)
		})
	})
}
