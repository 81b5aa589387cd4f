//go:build e2e

// Package e2e_test runs the reconciliation procedure of entitlements.md
// section 1 against the real platform binary: identity and box as separate
// processes, each on its own SQLite database, driven over HTTP and through
// `platform box grant|revoke|list`.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/e2e"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/testutil"
)

const password = "correct-horse-battery"

// ready waits until p's /readyz answers 200 and, should the test fail,
// reports what p wrote.
func ready(t *testing.T, name string, p *e2e.Proc) *e2e.Proc {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Logs())
		}
	})
	testutil.Eventually(t, 20*time.Second, name+" to be ready", func() bool {
		return e2e.Client{Base: p.URL}.Do(t, "GET", "/readyz", nil).Status == http.StatusOK
	})
	return p
}

// login opens a session for email and returns its token.
func login(t *testing.T, identity, email string) string {
	t.Helper()
	r := e2e.Client{Base: identity}.Do(t, "POST", "/v1/session", map[string]any{"email": email, "password": password})
	token, _ := r.JSON(t)["token"].(string)
	if r.Status != http.StatusCreated || token == "" {
		t.Fatalf("login %s: %d %s", email, r.Status, r.Body)
	}
	return token
}

// session registers a user and logs them in, returning id and token.
func session(t *testing.T, identity, email string) (string, string) {
	t.Helper()
	e2e.Client{Base: identity}.Do(t, "POST", "/v1/users", map[string]any{"email": email, "password": password}).Expect(t, http.StatusCreated)
	token := login(t, identity, email)
	r := e2e.Client{Base: identity, Token: token}.Do(t, "GET", "/v1/me", nil)
	id, _ := r.JSON(t)["id"].(string)
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("me %s: %d %s", email, r.Status, r.Body)
	}
	return id, token
}

// TestReconciliation: grant → the buyer's artifact check → revoke →
// re-grant, with the operator commands and real identity and box.
func TestReconciliation(t *testing.T) {
	dir := t.TempDir()
	identityPort := e2e.FreePort(t)
	identityURL := fmt.Sprintf("http://127.0.0.1:%d", identityPort)
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	identityEnv := e2e.Env{"PORT": strconv.Itoa(identityPort), "DATABASE_URL": "sqlite:" + filepath.Join(dir, "identity.db"),
		"IDENTITY_MASTER_KEY": e2e.MasterKey(), "IDENTITY_ISSUER": identityURL}
	boxEnv := e2e.Env{"DATABASE_URL": boxDB, "BOX_IDENTITY_URL": identityURL, "BOX_MASTER_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}

	e2e.MustRun(t, identityEnv, "identity", "migrate")
	e2e.MustRun(t, boxEnv, "box", "migrate")
	identity := ready(t, "identity", e2e.StartOn(t, identityPort, identityEnv, "identity", "serve"))
	box := ready(t, "box", e2e.Start(t, boxEnv, "box", "serve"))

	// The operator: a registered user made staff on identity's database.
	staffID, _ := session(t, identity.URL, "operator@example.com")
	e2e.MustRun(t, identityEnv, "identity", "staff", "add", "operator@example.com")
	staffToken := login(t, identity.URL, "operator@example.com")

	// The buyer creates their own team account and reads its id.
	_, buyerToken := session(t, identity.URL, "buyer@example.com")
	r := e2e.Client{Base: identity.URL, Token: buyerToken}.Do(t, "POST", "/v1/accounts", map[string]any{"name": "Buyer Team"})
	accountID, _ := r.JSON(t)["id"].(string)
	if r.Status != http.StatusCreated || accountID == "" {
		t.Fatalf("create account: %d %s", r.Status, r.Body)
	}

	operator := e2e.Env{"BOX_URL": box.URL, "PLATFORM_TOKEN": staffToken}
	grant := func(reference string) map[string]any {
		t.Helper()
		out := e2e.MustRun(t, operator, "box", "grant", "--account", accountID, "--product", "platform",
			"--range", "^1.0.0", "--source", "reconciled_payment", "--reference", reference)
		var row map[string]any
		if err := json.Unmarshal([]byte(out), &row); err != nil {
			t.Fatalf("box grant printed %q", out)
		}
		if row["status"] != "active" || row["account_id"] != accountID || row["granted_by"] != staffID ||
			row["reference"] != reference || row["source"] != "reconciled_payment" || row["version_range"] != "^1.0.0" {
			t.Fatalf("granted row %v", row)
		}
		return row
	}
	buyer := e2e.Client{Base: box.URL, Token: buyerToken}
	check := func(versionRange string) e2e.Response {
		t.Helper()
		return buyer.Do(t, "POST", "/v1/accounts/"+accountID+"/artifact_fetches",
			map[string]any{"artifact": "platform", "version_range": versionRange})
	}

	// 5. Grant.
	first := grant("pi_e2e_first")

	// 6. Verify as the buyer: the paid unit is invisible in the customer
	// read, and the artifact check succeeds with a redeemable capability.
	r = buyer.Do(t, "GET", "/v1/accounts/"+accountID+"/entitlements", nil)
	if list, ok := r.JSON(t)["entitlements"].([]any); r.Status != http.StatusOK || !ok || len(list) != 0 {
		t.Errorf("customer read: %d %s", r.Status, r.Body)
	}
	r = check("^1.4.0")
	capability, _ := r.JSON(t)["capability"].(map[string]any)
	if r.Status != http.StatusCreated || capability["token"] == nil {
		t.Fatalf("artifact check after grant: %d %s", r.Status, r.Body)
	}
	if r := check("^2.0.0"); r.Status != http.StatusForbidden || r.ErrorCode() != "version_not_granted" {
		t.Errorf("check outside the range: %d %s", r.Status, r.Body)
	}
	r = e2e.Client{Base: box.URL}.Do(t, "POST", "/v1/capabilities/redeem", map[string]any{"token": capability["token"]})
	if r.Status != http.StatusOK || r.JSON(t)["account_id"] != accountID {
		t.Errorf("redeem: %d %s", r.Status, r.Body)
	}

	// 9. A second grant while the first is active: 409, nothing granted.
	out, stderr, code := e2e.Run(t, operator, "box", "grant", "--account", accountID, "--product", "platform", "--reference", "pi_e2e_renewal")
	if code == 0 || !strings.Contains(stderr, "already holds an active platform entitlement") || !strings.Contains(out, "pi_e2e_first") {
		t.Errorf("duplicate grant: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}

	// The buyer is not staff: the operator API refuses them.
	buyerOperator := e2e.Env{"BOX_URL": box.URL, "PLATFORM_TOKEN": buyerToken}
	if _, stderr, code := e2e.Run(t, buyerOperator, "box", "grant", "--account", accountID, "--product", "courier"); code == 0 || !strings.Contains(stderr, "403 forbidden") {
		t.Errorf("grant as the buyer: exit %d %s", code, stderr)
	}

	// 7/8. Revoke: the buyer's check is now refused.
	out, stderr, code = e2e.Run(t, operator, "box", "revoke", fmt.Sprint(first["id"]))
	if code != 0 || !strings.Contains(out, `"status": "revoked"`) || !strings.Contains(out, staffID) {
		t.Fatalf("box revoke: exit %d\n%s%s", code, out, stderr)
	}
	if r := check("^1.4.0"); r.Status != http.StatusForbidden || r.ErrorCode() != "entitlement_required" {
		t.Errorf("artifact check after revoke: %d %s", r.Status, r.Body)
	}

	// Re-grant: a new row; the check succeeds again.
	second := grant("pi_e2e_second")
	if second["id"] == first["id"] {
		t.Errorf("re-grant reused id %v", first["id"])
	}
	if r := check("1.0.0"); r.Status != http.StatusCreated {
		t.Errorf("artifact check after re-grant: %d %s", r.Status, r.Body)
	}

	out, stderr, code = e2e.Run(t, operator, "box", "list", "--account", accountID)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "pi_e2e_second") {
		t.Errorf("box list: exit %d\n%s%s", code, out, stderr)
	}

	// The audit trail: one event per grant and per revoke, by the operator.
	db, err := sqldb.Open(context.Background(), boxDB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(context.Background(), `SELECT action, count(*) FROM entitlement_events WHERE actor_user_id = $1 GROUP BY action ORDER BY action`, staffID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var action string
		var n int
		if err := rows.Scan(&action, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s=%d", action, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "grant=2 revoke=1" {
		t.Errorf("events %v, want grant=2 revoke=1", got)
	}
}
