//go:build e2e

package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func identityEnv(t *testing.T, engine sqldb.Engine) e2e.Env {
	return e2e.Env{
		"DATABASE_URL":               sqltest.URL(t, engine),
		"IDENTITY_MASTER_KEY":        e2e.MasterKey(),
		"IDENTITY_LOCKOUT_THRESHOLD": "3",
	}
}

// startIdentity migrates (twice: the second run is a no-op) and serves.
func startIdentity(t *testing.T, env e2e.Env) *e2e.Proc {
	t.Helper()
	if out := e2e.MustRun(t, env, "identity", "migrate"); !strings.Contains(out, "migration(s) applied; schema is current") {
		t.Fatalf("first migrate: %q", out)
	}
	if out := e2e.MustRun(t, env, "identity", "migrate"); !strings.Contains(out, "0 migration(s) applied") {
		t.Fatalf("second migrate is not a no-op: %q", out)
	}
	return e2e.Start(t, env, "identity", "serve")
}

func login(t *testing.T, base, email, password string) string {
	t.Helper()
	r := e2e.Client{Base: base}.Do(t, "POST", "/v1/session", map[string]string{"email": email, "password": password}).Expect(t, http.StatusCreated)
	return r.JSON(t)["token"].(string)
}

func register(t *testing.T, base, email, password string) string {
	t.Helper()
	r := e2e.Client{Base: base}.Do(t, "POST", "/v1/users", map[string]string{"email": email, "password": password}).Expect(t, http.StatusCreated)
	return r.JSON(t)["id"].(string)
}

// TestIdentityServeWithoutDatabase: no DATABASE_URL means no /v1 routes.
func TestIdentityServeWithoutDatabase(t *testing.T) {
	p := e2e.Start(t, e2e.Env{}, "identity", "serve")
	c := e2e.Client{Base: p.URL}
	ready := c.Do(t, "GET", "/readyz", nil).Expect(t, http.StatusOK).JSON(t)
	if ready["status"] != "ok" || ready["deps"] != "none" {
		t.Errorf("readyz = %v, want status ok, deps none", ready)
	}
	c.Do(t, "POST", "/v1/users", map[string]string{"email": "a@b.co", "password": "12345678"}).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusNotFound)
}

// TestIdentityEndToEnd registers, signs in, locks out, rotates and
// withdraws a key against the real binary.
func TestIdentityEndToEnd(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identityEnv(t, engine)
		p := startIdentity(t, env)
		anon := e2e.Client{Base: p.URL}

		ready := anon.Do(t, "GET", "/readyz", nil).Expect(t, http.StatusOK).JSON(t)
		if ready["deps"] != string(engine) {
			t.Errorf("readyz deps = %v, want %s", ready["deps"], engine)
		}

		register(t, p.URL, "Ada@Example.com", "correct horse battery")
		anon.Do(t, "POST", "/v1/users", map[string]string{"email": " ada@example.COM ", "password": "another password"}).Expect(t, http.StatusConflict)

		tok := login(t, p.URL, "ada@example.com", "correct horse battery")
		ada := e2e.Client{Base: p.URL, Token: tok}
		me := ada.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusOK).JSON(t)
		if me["email"] != "ada@example.com" || me["staff"] != false {
			t.Errorf("me = %v", me)
		}

		// Staff is set on the database by the operator command.
		ada.Do(t, "GET", "/v1/operator/me", nil).Expect(t, http.StatusForbidden)
		e2e.MustRun(t, env, "identity", "staff", "add", "ADA@example.com")
		ada.Do(t, "GET", "/v1/operator/me", nil).Expect(t, http.StatusOK)
		if _, _, code := e2e.Run(t, env, "identity", "staff", "add", "nobody@example.com"); code != 1 {
			t.Errorf("staff add of an unknown address: exit %d, want 1", code)
		}

		// Lockout: three wrong passwords, then even the right one is 423.
		register(t, p.URL, "bob@example.com", "bobs password")
		for i := 0; i < 3; i++ {
			anon.Do(t, "POST", "/v1/session", map[string]string{"email": "bob@example.com", "password": "wrong password"}).Expect(t, http.StatusUnauthorized)
		}
		locked := anon.Do(t, "POST", "/v1/session", map[string]string{"email": "bob@example.com", "password": "bobs password"}).Expect(t, http.StatusLocked)
		if s, err := strconv.Atoi(locked.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("Retry-After = %q, want whole seconds", locked.Header.Get("Retry-After"))
		}
		if code := locked.JSON(t)["code"]; code != "account_locked" {
			t.Errorf("code = %v, want account_locked", code)
		}
		// An unknown address never locks and answers like a wrong password.
		unknown := anon.Do(t, "POST", "/v1/session", map[string]string{"email": "nobody@example.com", "password": "whatever!"}).Expect(t, http.StatusUnauthorized)
		wrong := anon.Do(t, "POST", "/v1/session", map[string]string{"email": "ada@example.com", "password": "whatever!"}).Expect(t, http.StatusUnauthorized)
		if unknown.JSON(t)["detail"] != wrong.JSON(t)["detail"] {
			t.Errorf("unknown address and wrong password answer differently")
		}

		// Rotation: the old key stays published, new tokens use the new key.
		oldKID := onlyKID(t, e2e.MustRun(t, env, "identity", "keys", "list"))
		e2e.MustRun(t, env, "identity", "keys", "rotate")
		testutil.Eventually(t, 5*time.Second, "the rotated key set", func() bool {
			return len(anon.Do(t, "GET", "/.well-known/jwks.json", nil).JSON(t)["keys"].([]any)) == 2
		})
		newTok := login(t, p.URL, "ada@example.com", "correct horse battery")
		ada.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusOK)
		if _, _, code := e2e.Run(t, env, "identity", "keys", "withdraw", "no-such-kid"); code != 1 {
			t.Errorf("withdraw of an unknown kid: exit %d, want 1", code)
		}

		// Withdrawal: the old key leaves the key set and its tokens are refused.
		e2e.MustRun(t, env, "identity", "keys", "withdraw", oldKID)
		testutil.Eventually(t, 5*time.Second, "the withdrawn key's token to be refused", func() bool {
			return ada.Do(t, "GET", "/v1/me", nil).Status == http.StatusUnauthorized
		})
		keys := anon.Do(t, "GET", "/.well-known/jwks.json", nil).JSON(t)["keys"].([]any)
		if len(keys) != 1 || keys[0].(map[string]any)["kid"] == oldKID {
			t.Errorf("key set after withdrawal = %v", keys)
		}
		fresh := e2e.Client{Base: p.URL, Token: newTok}
		fresh.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusOK)
		// The signer cannot be withdrawn.
		signer := keys[0].(map[string]any)["kid"].(string)
		if _, stderr, code := e2e.Run(t, env, "identity", "keys", "withdraw", signer); code != 1 || !strings.Contains(stderr, "rotate first") {
			t.Errorf("withdraw of the signer: exit %d, stderr %q", code, stderr)
		}

		// Logout ends exactly that session.
		fresh.Do(t, "DELETE", "/v1/session", nil).Expect(t, http.StatusNoContent)
		fresh.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusUnauthorized)

		// Nothing secret reached the logs.
		logs := p.Logs()
		for _, secret := range []string{"correct horse battery", "bobs password", tok, newTok, env["IDENTITY_MASTER_KEY"]} {
			if strings.Contains(logs, secret) {
				t.Errorf("a secret appears in the identity log")
			}
		}
	})
}

func onlyKID(t *testing.T, list string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 2 {
		t.Fatalf("keys list = %q, want a header and one key", list)
	}
	return strings.Fields(lines[1])[0]
}

// TestProvisioningProcedure runs identity.md section 1, steps 1 to 10.
func TestProvisioningProcedure(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		env := identityEnv(t, engine)
		p := startIdentity(t, env)
		anon := e2e.Client{Base: p.URL}
		db, err := sqldb.Open(context.Background(), env["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()

		// 1. Readiness names the database.
		if deps := anon.Do(t, "GET", "/readyz", nil).Expect(t, http.StatusOK).JSON(t)["deps"]; deps != string(engine) {
			t.Fatalf("step 1: deps = %v", deps)
		}
		// 2–3. The first user registers and signs in.
		register(t, p.URL, "owner@example.com", "owner password")
		owner := e2e.Client{Base: p.URL, Token: login(t, p.URL, "owner@example.com", "owner password")}
		// 4. The personal account exists, owned.
		var accounts []map[string]any
		decodeInto(t, owner.Do(t, "GET", "/v1/accounts", nil).Expect(t, http.StatusOK).Body, &accounts)
		if len(accounts) != 1 || accounts[0]["personal"] != true || accounts[0]["role"] != "owner" {
			t.Fatalf("step 4: accounts = %v", accounts)
		}
		// 5. The tenant.
		tenant := owner.Do(t, "POST", "/v1/accounts", map[string]string{"name": "Acme Widgets"}).Expect(t, http.StatusCreated).JSON(t)
		id := tenant["id"].(string)
		if tenant["slug"] != "acme-widgets" || tenant["personal"] != false || tenant["role"] != "owner" || tenant["updated_at"] == nil {
			t.Fatalf("step 5: account = %v", tenant)
		}
		// 6. An invitation; its token is the only delivery.
		inv := owner.Do(t, "POST", "/v1/accounts/"+id+"/invitations", map[string]string{"email": "member@example.com", "role": "member"}).Expect(t, http.StatusCreated).JSON(t)
		token := inv["token"].(string)
		// 7. The invitee registers, signs in and accepts.
		memberID := register(t, p.URL, "member@example.com", "member password")
		member := e2e.Client{Base: p.URL, Token: login(t, p.URL, "member@example.com", "member password")}
		// Only a verified holder of the invited address accepts
		// (identity-lifecycle.md section 1).
		member.Do(t, "POST", "/v1/invitations/accept", map[string]string{"token": token}).Expect(t, http.StatusForbidden)
		e2e.VerifyEmail(t, p.URL, db, env["IDENTITY_MASTER_KEY"], "member@example.com")
		accepted := member.Do(t, "POST", "/v1/invitations/accept", map[string]string{"token": token}).Expect(t, http.StatusOK).JSON(t)
		if accepted["user_id"] != memberID || accepted["account_id"] != id || accepted["role"] != "member" {
			t.Fatalf("step 7: accept = %v", accepted)
		}
		member.Do(t, "POST", "/v1/invitations/accept", map[string]string{"token": token}).Expect(t, http.StatusGone)
		// 8. The owner promotes the member to owner.
		promoted := owner.Do(t, "PATCH", "/v1/accounts/"+id+"/members/"+memberID, map[string]string{"role": "owner"}).Expect(t, http.StatusOK).JSON(t)
		if promoted["role"] != "owner" {
			t.Fatalf("step 8: membership = %v", promoted)
		}
		// 9. Both read the account; an outsider gets 404, like an unknown id.
		owner.Do(t, "GET", "/v1/accounts/"+id, nil).Expect(t, http.StatusOK)
		member.Do(t, "GET", "/v1/accounts/"+id, nil).Expect(t, http.StatusOK)
		register(t, p.URL, "outsider@example.com", "outsider password")
		outsider := e2e.Client{Base: p.URL, Token: login(t, p.URL, "outsider@example.com", "outsider password")}
		hidden := outsider.Do(t, "GET", "/v1/accounts/"+id, nil).Expect(t, http.StatusNotFound).JSON(t)
		unknown := outsider.Do(t, "GET", "/v1/accounts/00000000-0000-4000-8000-000000000000", nil).Expect(t, http.StatusNotFound).JSON(t)
		if hidden["detail"] != unknown["detail"] || hidden["code"] != unknown["code"] {
			t.Errorf("step 9: a hidden account answers differently from an unknown one: %v vs %v", hidden, unknown)
		}
		// The member list carries every field.
		var members struct {
			Members []map[string]any `json:"members"`
		}
		decodeInto(t, member.Do(t, "GET", "/v1/accounts/"+id+"/members", nil).Expect(t, http.StatusOK).Body, &members)
		if len(members.Members) != 2 {
			t.Fatalf("members = %v", members)
		}
		for _, m := range members.Members {
			for _, f := range []string{"account_id", "user_id", "email", "role", "created_at"} {
				if v, _ := m[f].(string); v == "" {
					t.Errorf("member %v: %s is empty", m, f)
				}
			}
		}
		// 10. Memberships are corrected, not the tenant: the promoted member
		// steps back down, and with two owners that succeeds.
		member.Do(t, "PATCH", "/v1/accounts/"+id+"/members/"+memberID, map[string]string{"role": "member"}).Expect(t, http.StatusOK)
		owner.Do(t, "GET", "/v1/accounts/"+id, nil).Expect(t, http.StatusOK)
	})
}
