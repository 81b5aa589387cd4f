package httpapi_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/muse/httpapi"
	"github.com/platformco/platform/internal/openapi/openapitest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestKeyRoleKept checks identity's answer for an API key: kept for
// KeyRoleTTL per key and account, asked again after it, and a failure
// (identity down, a key not of the account) never kept.
func TestKeyRoleKept(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		// The service's clock stands still but for later.
		var skew atomic.Int64
		start := time.Now()
		e := newEnv(t, engine, func(o *muse.Options, _ *httpapi.Deps) {
			o.Now = func() time.Time { return start.Add(time.Duration(skew.Load())) }
		})
		later := func(d time.Duration) { skew.Add(int64(d)) }
		const keyOther = "plat_otherotherotherotherotherotherotherotherother"
		e.identity.mu.Lock()
		e.identity.dir[keyOther] = member{roles: map[string]string{otherAcct: muse.RoleAPIKey},
			scopes: []string{muse.ScopeModelsInvoke}}
		e.identity.mu.Unlock()
		setRoles := func(key string, roles map[string]string) {
			e.identity.mu.Lock()
			defer e.identity.mu.Unlock()
			m := e.identity.dir[key]
			m.roles = roles
			e.identity.dir[key] = m
		}
		body := chatBody("echo", "")
		for _, step := range []struct {
			name   string
			before func()
			key    string
			acct   string // the account named (account when empty)
			status int
			code   string
			reads  int // identity's role reads made by this step
		}{
			{"FirstAsks", nil, keyInvoke, "", 200, "", 1},
			{"KeptWithinTTL", func() { later(keyRoleTTLLess) }, keyInvoke, "", 200, "", 0},
			{"KeptWhileIdentityIsDown", func() { e.identity.setDown(true) }, keyInvoke, "", 200, "", 0},
			{"ExpiredAsksAndFailsClosed", func() { later(muse.KeyRoleTTL) }, keyInvoke, "", 503, "unavailable", 1},
			{"FailureNotKept", func() { e.identity.setDown(false) }, keyInvoke, "", 200, "", 1},
			{"PerAccount", nil, keyInvoke, otherAcct, 403, "forbidden", 1},
			{"NotAMember", nil, keyOther, "", 403, "forbidden", 1},
			{"RefusalNotKept", func() { setRoles(keyOther, map[string]string{account: muse.RoleAPIKey}) }, keyOther, "", 200, "", 1},
			{"RevokedWithinTTLStillKept", func() { setRoles(keyOther, nil) }, keyOther, "", 200, "", 0},
			{"RevokedAfterTTL", func() { later(muse.KeyRoleTTL) }, keyOther, "", 403, "forbidden", 1},
		} {
			if step.before != nil {
				step.before()
			}
			before := e.identity.reads()
			acct := step.acct
			if acct == "" {
				acct = account
			}
			opts := []openapitest.Option{openapitest.Bearer(step.key), org(acct)}
			if step.code == "" {
				e.c.Do("POST", "/v1/chat/completions", body, step.status, opts...)
			} else {
				e.c.Code("POST", "/v1/chat/completions", body, step.status, step.code, opts...)
			}
			if got := e.identity.reads() - before; got != step.reads {
				t.Fatalf("%s: %d role reads, want %d", step.name, got, step.reads)
			}
		}
		// A user's token asks identity every time.
		before := e.identity.reads()
		for range 2 {
			e.c.Do("POST", "/v1/chat/completions", body, http.StatusOK, openapitest.Bearer(e.member), org(account))
		}
		if got := e.identity.reads() - before; got != 2 {
			t.Fatalf("a user's two completions made %d role reads, want 2", got)
		}
	})
}

// keyRoleTTLLess is a moment short of KeyRoleTTL.
const keyRoleTTLLess = muse.KeyRoleTTL - time.Millisecond
