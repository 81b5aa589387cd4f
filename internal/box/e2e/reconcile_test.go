// Package e2e runs the reconciliation procedure of entitlements.md section 1
// against the real platform binary: identity and box as separate processes,
// each on its own SQLite database, driven over HTTP and through
// `platform box grant|revoke|list`.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/sqldb"
)

var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "box-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "platform")
	build := exec.Command("go", "build", "-o", binary, "github.com/platformco/platform/cmd/platform")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build platform:", err)
		return 1
	}
	return m.Run()
}

// lockedBuffer collects a subprocess's output for the failure report.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// platform runs one command to completion.
func platform(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// start runs a long-lived command, stopped with SIGINT when the test ends,
// and waits until its /readyz answers 200.
func start(t *testing.T, name, base string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(25 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("%s exited: %v\n%s", name, err, logs.String())
		default:
		}
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never became ready:\n%s", name, logs.String())
}

// call sends a JSON request and decodes the JSON answer.
func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, url, res.StatusCode, raw)
		}
	}
	return res.StatusCode, out
}

func errorCode(body map[string]any) string {
	if e, ok := body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// session registers a user and logs them in, returning id and token.
func session(t *testing.T, identity, email string) (string, string) {
	t.Helper()
	const password = "correct-horse-battery"
	if status, body := call(t, "POST", identity+"/v1/users", "", map[string]any{"email": email, "password": password}); status != 201 {
		t.Fatalf("register %s: %d %v", email, status, body)
	}
	status, body := call(t, "POST", identity+"/v1/session", "", map[string]any{"email": email, "password": password})
	token, _ := body["token"].(string)
	if status != 201 || token == "" {
		t.Fatalf("login %s: %d %v", email, status, body)
	}
	status, me := call(t, "GET", identity+"/v1/me", token, nil)
	id, _ := me["id"].(string)
	if status != 200 || id == "" {
		t.Fatalf("me %s: %d %v", email, status, me)
	}
	return id, token
}

// TestReconciliation: grant → the buyer's artifact check → revoke →
// re-grant, with the operator commands and real identity and box.
func TestReconciliation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	dir := t.TempDir()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	identityPort, boxPort := freePort(t), freePort(t)
	identity, boxURL := "http://127.0.0.1:"+identityPort, "http://127.0.0.1:"+boxPort
	boxDB := "sqlite:" + filepath.Join(dir, "box.db")
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	identityEnv := append(base, "PORT="+identityPort, "DATABASE_URL=sqlite:"+filepath.Join(dir, "identity.db"),
		"IDENTITY_MASTER_KEY="+base64.StdEncoding.EncodeToString(key), "IDENTITY_ISSUER="+identity)
	boxEnv := append(base, "PORT="+boxPort, "DATABASE_URL="+boxDB, "BOX_IDENTITY_URL="+identity)

	if _, stderr, err := platform(t, identityEnv, "identity", "migrate"); err != nil {
		t.Fatalf("identity migrate: %v\n%s", err, stderr)
	}
	if _, stderr, err := platform(t, boxEnv, "box", "migrate"); err != nil {
		t.Fatalf("box migrate: %v\n%s", err, stderr)
	}
	start(t, "identity", identity, identityEnv, "identity", "serve")
	start(t, "box", boxURL, boxEnv, "box", "serve")

	// The operator: a registered user made staff on identity's database.
	staffID, _ := session(t, identity, "operator@example.com")
	if out, stderr, err := platform(t, identityEnv, "identity", "staff", "add", "operator@example.com"); err != nil {
		t.Fatalf("staff add: %v\n%s%s", err, out, stderr)
	}
	staffToken := func() string {
		_, body := call(t, "POST", identity+"/v1/session", "", map[string]any{"email": "operator@example.com", "password": "correct-horse-battery"})
		return body["token"].(string)
	}()

	// The buyer creates their own team account and reads its id.
	_, buyerToken := session(t, identity, "buyer@example.com")
	status, acct := call(t, "POST", identity+"/v1/accounts", buyerToken, map[string]any{"name": "Buyer Team"})
	accountID, _ := acct["id"].(string)
	if status != 201 || accountID == "" {
		t.Fatalf("create account: %d %v", status, acct)
	}

	operator := append(base, "BOX_URL="+boxURL, "PLATFORM_TOKEN="+staffToken)
	grant := func(reference string) map[string]any {
		t.Helper()
		out, stderr, err := platform(t, operator, "box", "grant", "--account", accountID, "--product", "platform",
			"--range", "^1.0.0", "--source", "reconciled_payment", "--reference", reference)
		if err != nil {
			t.Fatalf("box grant: %v\n%s%s", err, out, stderr)
		}
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
	check := func(versionRange string) (int, map[string]any) {
		return call(t, "POST", boxURL+"/v1/accounts/"+accountID+"/artifact_fetches", buyerToken,
			map[string]any{"artifact": "platform", "version_range": versionRange})
	}

	// 5. Grant.
	first := grant("pi_e2e_first")

	// 6. Verify as the buyer: the paid unit is invisible in the customer
	// read, and the artifact check succeeds with a redeemable capability.
	if status, body := call(t, "GET", boxURL+"/v1/accounts/"+accountID+"/entitlements", buyerToken, nil); status != 200 || len(body["entitlements"].([]any)) != 0 {
		t.Errorf("customer read: %d %v", status, body)
	}
	status, body := check("^1.4.0")
	capability, _ := body["capability"].(map[string]any)
	if status != 201 || capability["token"] == nil {
		t.Fatalf("artifact check after grant: %d %v", status, body)
	}
	if status, body := check("^2.0.0"); status != 403 || errorCode(body) != "version_not_granted" {
		t.Errorf("check outside the range: %d %v", status, body)
	}
	if status, body := call(t, "POST", boxURL+"/v1/capabilities/redeem", "", map[string]any{"token": capability["token"]}); status != 200 || body["account_id"] != accountID {
		t.Errorf("redeem: %d %v", status, body)
	}

	// 9. A second grant while the first is active: 409, nothing granted.
	out, stderr, err := platform(t, operator, "box", "grant", "--account", accountID, "--product", "platform", "--reference", "pi_e2e_renewal")
	if err == nil || !strings.Contains(stderr, "already holds an active platform entitlement") || !strings.Contains(out, "pi_e2e_first") {
		t.Errorf("duplicate grant: err %v\nstdout %s\nstderr %s", err, out, stderr)
	}

	// The buyer is not staff: the operator API refuses them.
	buyerOperator := append(base, "BOX_URL="+boxURL, "PLATFORM_TOKEN="+buyerToken)
	if _, stderr, err := platform(t, buyerOperator, "box", "grant", "--account", accountID, "--product", "courier"); err == nil || !strings.Contains(stderr, "403 forbidden") {
		t.Errorf("grant as the buyer: %v %s", err, stderr)
	}

	// 7/8. Revoke: the buyer's check is now refused.
	out, stderr, err = platform(t, operator, "box", "revoke", fmt.Sprint(first["id"]))
	if err != nil || !strings.Contains(out, `"status": "revoked"`) || !strings.Contains(out, staffID) {
		t.Fatalf("box revoke: %v\n%s%s", err, out, stderr)
	}
	if status, body := check("^1.4.0"); status != 403 || errorCode(body) != "entitlement_required" {
		t.Errorf("artifact check after revoke: %d %v", status, body)
	}

	// Re-grant: a new row; the check succeeds again.
	second := grant("pi_e2e_second")
	if second["id"] == first["id"] {
		t.Errorf("re-grant reused id %v", first["id"])
	}
	if status, body := check("1.0.0"); status != 201 {
		t.Errorf("artifact check after re-grant: %d %v", status, body)
	}

	out, stderr, err = platform(t, operator, "box", "list", "--account", accountID)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 || !strings.Contains(lines[0], "pi_e2e_second") {
		t.Errorf("box list: %v\n%s%s", err, out, stderr)
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
	if strings.Join(got, " ") != "grant=2 revoke=1" {
		t.Errorf("events %v, want grant=2 revoke=1", got)
	}
}
