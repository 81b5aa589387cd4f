package muse

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// KeyRoleTTL bounds how long identity's answer for an API key in an
// account (its role and scopes) is kept without asking again. The role
// read was a quarter to a third of what muse adds to a completion, and a
// key's callers send completion after completion. A key revoked, or its
// scopes narrowed, keeps invoking models for at most this long, as a
// credential ended on another keyholder does (decision 0011). Failures
// are never kept: a refused or unanswered key asks identity every time.
const KeyRoleTTL = 5 * time.Second

// maxKeyRoles bounds the memory of the kept answers; past it they start
// over.
const maxKeyRoles = 8192

// keyRoles are identity's answers for API keys, by the digest of the key
// and the account.
type keyRoles struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]keyRole
}

type keyRole struct {
	role   string
	scopes []string
	until  time.Time
}

func keyRoleID(token, account string) [sha256.Size]byte {
	return sha256.Sum256([]byte(account + "\n" + token))
}

func (k *keyRoles) get(id [sha256.Size]byte, now time.Time) (keyRole, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.m[id]
	if !ok || !now.Before(r.until) {
		return keyRole{}, false
	}
	return r, true
}

func (k *keyRoles) put(id [sha256.Size]byte, r keyRole) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKeyRoles {
		k.m = make(map[[sha256.Size]byte]keyRole)
	}
	k.m[id] = r
}

// keyRole returns an API key's role and scopes in account: a kept answer
// younger than KeyRoleTTL, or identity's, kept when it is one.
func (s *Service) keyRole(ctx context.Context, token, account string) (string, []string, error) {
	id := keyRoleID(token, account)
	if r, ok := s.keyRoles.get(id, s.now()); ok {
		return r.role, r.scopes, nil
	}
	role, scopes, err := s.identity.AccountRole(ctx, token, account)
	if err != nil {
		return "", nil, err
	}
	s.keyRoles.put(id, keyRole{role: role, scopes: scopes, until: s.now().Add(KeyRoleTTL)})
	return role, scopes, nil
}
