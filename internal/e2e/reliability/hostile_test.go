//go:build e2e

package reliability

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/testutil"
)

// TestHostileInput runs, against one identity, box and gateway: the
// tenant-isolation matrix, token tampering, request limits and the
// directory's literal matching; then it greps every log for the secrets it
// used, and the databases for clear-text credentials.
func TestHostileInput(t *testing.T) {
	s := newStack(t, startPostgres(t), stackOptions{})
	gw := startGateway(t, s, nil)
	op := s.staff(t, "operator@example.com")
	owner := s.register(t, "owner@example.com")
	const teamName = "Confidential Tenant Name"
	acct := s.team(t, owner, teamName)
	invite := func(email, role string) (user, string) {
		inv := s.identityAs(owner).Do(t, "POST", "/v1/accounts/"+acct+"/invitations", map[string]string{"email": email, "role": role}).
			Expect(t, http.StatusCreated).JSON(t)["token"].(string)
		u := s.register(t, email)
		s.identityAs(u).Do(t, "POST", "/v1/invitations/accept", map[string]string{"token": inv}).Expect(t, http.StatusOK)
		return u, inv
	}
	admin, invAdmin := invite("admin@example.com", "admin")
	member, invMember := invite("member@example.com", "member")
	removed, invRemoved := invite("removed@example.com", "member")
	s.identityAs(owner).Do(t, "DELETE", "/v1/accounts/"+acct+"/members/"+removed.id, nil).Expect(t, http.StatusNoContent)
	outsider := s.register(t, "outsider@example.com")

	// State box guards: a paid grant, a release, a capability.
	s.boxAs(op).Do(t, "POST", "/v1/operator/entitlements", map[string]any{"account_id": acct, "product": "platform", "version_range": "^1.0.0"}).Expect(t, http.StatusCreated)
	rel := s.boxAs(op).Do(t, "POST", "/v1/operator/releases", map[string]any{"product": "platform", "version": "1.1.0"}).Expect(t, http.StatusCreated).JSON(t)["release"].(map[string]any)["id"]
	capTok := s.boxAs(member).Do(t, "POST", "/v1/accounts/"+acct+"/artifact_fetches", map[string]any{"artifact": "platform", "version_range": "^1.0.0"}).
		Expect(t, http.StatusCreated).JSON(t)["capability"].(map[string]any)["token"].(string)

	t.Run("tenant isolation matrix", func(t *testing.T) {
		type route struct {
			svc, method, path string
			body              any
			min               string // member, admin, owner
		}
		routes := []route{
			{"identity", "GET", "/v1/accounts/" + acct, nil, "member"},
			{"identity", "GET", "/v1/accounts/" + acct + "/members", nil, "member"},
			{"identity", "PATCH", "/v1/accounts/" + acct, map[string]string{"name": "Renamed"}, "admin"},
			{"identity", "POST", "/v1/accounts/" + acct + "/invitations", map[string]string{"email": "x@example.com", "role": "member"}, "admin"},
			// Another member: removing oneself is leaving, which any member may do.
			{"identity", "DELETE", "/v1/accounts/" + acct + "/members/" + admin.id, nil, "admin"},
			{"identity", "PATCH", "/v1/accounts/" + acct + "/members/" + member.id, map[string]string{"role": "admin"}, "owner"},
			{"identity", "DELETE", "/v1/accounts/" + acct, nil, "owner"},
			{"box", "GET", "/v1/accounts/" + acct + "/entitlements", nil, "member"},
			{"box", "POST", "/v1/accounts/" + acct + "/artifact_fetches", map[string]any{"artifact": "platform", "version_range": "^1.0.0"}, "member"},
			{"box", "GET", "/v1/accounts/" + acct + "/releases", nil, "member"},
			{"box", "POST", "/v1/accounts/" + acct + "/approvals", map[string]any{"release_id": rel}, "member"},
			{"box", "POST", "/v1/accounts/" + acct + "/claims", nil, "member"},
			{"box", "GET", "/v1/accounts/" + acct + "/audit-events", nil, "member"},
		}
		rank := map[string]int{"member": 1, "admin": 2, "owner": 3}
		callers := []struct {
			name string
			u    user
			role string // "" for a non-member
		}{{"outsider", outsider, ""}, {"removed member", removed, ""}, {"member", member, "member"}, {"admin", admin, "admin"}}
		identityRows := func() int {
			return count(t, s.identityDB, `SELECT (SELECT count(*) FROM memberships) + (SELECT count(*) FROM invitations) + (SELECT count(*) FROM accounts WHERE name = $1)`, teamName)
		}
		id0, box0 := identityRows(), s.boxRows(t)
		for _, c := range callers {
			for _, r := range routes {
				want := 0
				switch {
				case c.role == "":
					want = http.StatusNotFound
				case rank[c.role] < rank[r.min]:
					want = http.StatusForbidden
				default:
					continue // allowed: not part of the matrix
				}
				for _, via := range []string{"direct", "gateway"} {
					base := s.identity.URL
					if r.svc == "box" {
						base = s.box.URL
					}
					if via == "gateway" {
						base = gw.URL
					}
					res := e2e.Client{Base: base, Token: c.u.token}.Do(t, r.method, r.path, r.body)
					if res.Status != want {
						t.Errorf("%s %s %s via %s: %d, want %d; %s", c.name, r.method, r.path, via, res.Status, want, res.Body)
					}
					for _, secret := range []string{teamName, "confidential-tenant-name", owner.email, member.email, admin.email} {
						if strings.Contains(strings.ToLower(string(res.Body)), strings.ToLower(secret)) {
							t.Errorf("%s %s %s via %s: the body reveals %q", c.name, r.method, r.path, via, secret)
						}
					}
				}
			}
		}
		if identityRows() != id0 || s.boxRows(t) != box0 {
			t.Errorf("refused calls wrote rows: identity %d→%d, box %d→%d", id0, identityRows(), box0, s.boxRows(t))
		}
	})

	t.Run("token tampering", func(t *testing.T) {
		ring := keyRing(t, s)
		sid := sessionID(t, owner.token)
		kid := tokenKID(t, owner.token)
		mint := func(mut func(c *identity.Claims)) string {
			now := time.Now()
			c := identity.Claims{RegisteredClaims: jwt.RegisteredClaims{
				Issuer: s.identityEnv["IDENTITY_ISSUER"], Subject: owner.id,
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			}, SID: sid}
			mut(&c)
			tok, err := ring.Sign(c)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		// The control: a minted token with nothing wrong is accepted.
		e2e.Client{Base: s.identity.URL, Token: mint(func(*identity.Claims) {})}.Do(t, "GET", "/v1/me", nil).Expect(t, http.StatusOK)

		baseClaims := jwt.MapClaims{"iss": s.identityEnv["IDENTITY_ISSUER"], "sub": owner.id, "sid": sid,
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		noneTok := jwt.NewWithClaims(jwt.SigningMethodNone, baseClaims)
		noneTok.Header["kid"] = kid
		none, _ := noneTok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
		wrongTok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, baseClaims)
		wrongTok.Header["kid"] = kid
		wrongKey, _ := wrongTok.SignedString(otherKey)

		logout := s.login(t, owner)
		e2e.Client{Base: s.identity.URL, Token: logout}.Do(t, "DELETE", "/v1/session", nil).Expect(t, http.StatusNoContent)
		doomed := s.register(t, "doomed@example.com")
		if _, err := s.identityDB.Exec(context.Background(), `DELETE FROM users WHERE id = $1`, doomed.id); err != nil {
			t.Fatal(err)
		}
		tokens := map[string]string{
			"alg none":          none,
			"wrong key":         wrongKey,
			"wrong issuer":      mint(func(c *identity.Claims) { c.Issuer = "http://evil.example" }),
			"expired":           mint(func(c *identity.Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour)) }),
			"unknown session":   mint(func(c *identity.Claims) { c.SID = uuid.NewString() }),
			"logged-out":        logout,
			"deleted user":      doomed.token,
			"minted for nobody": mint(func(c *identity.Claims) { c.Subject = uuid.NewString() }),
			"garbage":           "not.a.token",
		}
		check := func(name, tok string) {
			t.Helper()
			for _, target := range []struct{ base, path string }{
				{s.identity.URL, "/v1/me"}, {s.identity.URL, "/v1/accounts/" + acct},
				{s.box.URL, "/v1/accounts/" + acct + "/entitlements"}, {s.box.URL, "/v1/operator/entitlements"},
				{gw.URL, "/v1/me"}, {gw.URL, "/v1/accounts/" + acct}, {gw.URL, "/v1/accounts/" + acct + "/entitlements"},
			} {
				if r := (e2e.Client{Base: target.base, Token: tok}).Do(t, "GET", target.path, nil); r.Status != http.StatusUnauthorized {
					t.Errorf("%s token at %s%s: %d, want 401; %s", name, target.base, target.path, r.Status, r.Body)
				}
			}
		}
		for name, tok := range tokens {
			check(name, tok)
		}

		// A withdrawn key: the owner's token was signed by the key that is
		// rotated out and withdrawn.
		e2e.MustRun(t, s.identityEnv, "identity", "keys", "rotate")
		e2e.MustRun(t, s.identityEnv, "identity", "keys", "withdraw", kid)
		testutil.Eventually(t, 10*time.Second, "the withdrawn key to be refused everywhere", func() bool {
			return (e2e.Client{Base: gw.URL, Token: owner.token}).Do(t, "GET", "/v1/accounts/"+acct+"/entitlements", nil).Status == 401 &&
				(e2e.Client{Base: s.identity.URL, Token: owner.token}).Do(t, "GET", "/v1/me", nil).Status == 401
		})
		check("withdrawn key", owner.token)
		// Everyone signs in again under the new key.
		op.token, owner.token = s.login(t, op), s.login(t, owner)
	})

	t.Run("request limits", func(t *testing.T) {
		big := map[string]string{"email": strings.Repeat("a", 1<<20+10) + "@example.com", "password": "x"}
		for _, target := range []struct{ base, path, token string }{
			{s.identity.URL, "/v1/users", ""}, {s.identity.URL, "/v1/accounts", owner.token},
			{s.box.URL, "/v1/operator/entitlements", op.token}, {s.box.URL, "/v1/capabilities/redeem", ""},
			{gw.URL, "/v1/users", ""},
		} {
			if r := (e2e.Client{Base: target.base, Token: target.token}).Do(t, "POST", target.path, big); r.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("POST %s%s with 1 MiB+: %d, want 413", target.base, target.path, r.Status)
			}
		}
		// Slow headers: the connection is cut (ReadHeaderTimeout, 5 s).
		var wg sync.WaitGroup
		for _, base := range []string{s.identity.URL, s.box.URL, gw.URL} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
				_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
				_, err = io.ReadAll(conn)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("%s kept a connection with unfinished headers open for 15 s", base)
				}
			}()
		}
		wg.Wait()
	})

	t.Run("directory matches literally", func(t *testing.T) {
		for email, name := range map[string]string{
			"pct@example.com": "Ada 100% Sure", "num@example.com": "Ada 1000 Sure",
			"snake@example.com": "snake_case Bob", "camel@example.com": "snakeXcase Bob",
		} {
			e2e.Client{Base: s.identity.URL}.Do(t, "POST", "/v1/users", map[string]string{"email": email, "password": password(email), "display_name": name}).Expect(t, http.StatusCreated)
		}
		search := func(q string) []string {
			r := s.identityAs(op).Do(t, "GET", "/v1/operator/users?query="+urlQuery(q), nil).Expect(t, http.StatusOK)
			var out []string
			for _, u := range r.JSON(t)["users"].([]any) {
				out = append(out, u.(map[string]any)["email"].(string))
			}
			return out
		}
		for q, want := range map[string]string{"0% S": "pct@example.com", "e_c": "snake@example.com"} {
			if got := search(q); len(got) != 1 || got[0] != want {
				t.Errorf("query %q matched %v, want only %s", q, got, want)
			}
		}
		for _, q := range []string{"' OR '1'='1", `\%`, "%%", "__", "'; DROP TABLE users; --"} {
			if got := search(q); len(got) != 0 {
				t.Errorf("query %q matched %v, want nothing", q, got)
			}
		}
	})

	t.Run("no secret in logs or in the clear", func(t *testing.T) {
		secrets := map[string]string{
			"master key": s.identityEnv["IDENTITY_MASTER_KEY"], "capability token": capTok,
			"invitation token (admin)": invAdmin, "invitation token (member)": invMember, "invitation token (removed)": invRemoved,
		}
		for _, u := range []user{op, owner, admin, member, removed, outsider} {
			secrets["password of "+u.email] = u.password
			secrets["bearer token of "+u.email] = u.token
		}
		for name, p := range map[string]*e2e.Proc{"identity": s.identity, "box": s.box, "gateway": gw} {
			logs := p.Logs()
			for what, secret := range secrets {
				if strings.Contains(logs, secret) {
					t.Errorf("the %s log contains the %s", name, what)
				}
			}
		}
		for what, q := range map[string]string{
			"a password in users":          `SELECT count(*) FROM users u WHERE u::text LIKE '%' || $1 || '%'`,
			"a token in sessions":          `SELECT count(*) FROM sessions s WHERE s::text LIKE '%' || $1 || '%'`,
			"a token in invitations":       `SELECT count(*) FROM invitations i WHERE i::text LIKE '%' || $1 || '%'`,
			"a secret in the outbox":       `SELECT count(*) FROM outbox o WHERE o::text LIKE '%' || $1 || '%'`,
			"a secret in idempotency rows": `SELECT count(*) FROM idempotency_keys k WHERE k::text LIKE '%' || $1 || '%'`,
		} {
			for name, secret := range secrets {
				if n := count(t, s.identityDB, q, secret); n != 0 {
					t.Errorf("identity's database holds %s (%s)", what, name)
				}
			}
		}
		if n := count(t, s.boxDB, `SELECT count(*) FROM capabilities c WHERE c::text LIKE '%' || $1 || '%'`, capTok); n != 0 {
			t.Errorf("box's database holds the capability token in the clear")
		}
		if n := count(t, s.identityDB, `SELECT count(*) FROM users WHERE password_hash NOT LIKE '$argon2id$%'`); n != 0 {
			t.Errorf("%d password hashes are not argon2id", n)
		}
		// Signing keys: the sealed private keys open only with the master key.
		wrong := make([]byte, 32)
		_, _ = rand.Read(wrong)
		keys, err := identity.NewKeys(sqlstore.New(s.identityDB), wrong)
		if err != nil {
			t.Fatal(err)
		}
		if err := identity.NewKeyRing(keys).Refresh(context.Background()); err == nil {
			t.Errorf("the signing keys opened with a different master key: they are not sealed by it")
		}
	})
}

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "'", "%27", ";", "%3B", "\\", "%5C", "_", "_").Replace(s)
}

// keyRing opens identity's signing keys with its master key, to mint
// tokens no client could.
func keyRing(t *testing.T, s *stack) *identity.KeyRing {
	t.Helper()
	master, err := base64.StdEncoding.DecodeString(s.identityEnv["IDENTITY_MASTER_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewKeys(sqlstore.New(s.identityDB), master)
	if err != nil {
		t.Fatal(err)
	}
	ring := identity.NewKeyRing(keys)
	if err := ring.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ring
}

func unverified(t *testing.T, token string) (*jwt.Token, jwt.MapClaims) {
	t.Helper()
	claims := jwt.MapClaims{}
	tok, _, err := jwt.NewParser().ParseUnverified(token, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok, claims
}

func sessionID(t *testing.T, token string) string {
	_, c := unverified(t, token)
	return c["sid"].(string)
}

func tokenKID(t *testing.T, token string) string {
	tok, _ := unverified(t, token)
	return tok.Header["kid"].(string)
}
