package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/platformco/platform/internal/sqldb"
)

const (
	benchPassword = "bench-password-1234"
	benchUsers    = 16
)

// user is a registered customer with a team account that holds an active
// platform entitlement.
type user struct {
	Email     string
	ID        string
	Token     string
	AccountID string
}

// platform is the running system under test: identity, box and the
// gateway as separate processes on loopback, each with its own database.
type platform struct {
	bin      string
	dir      string
	engine   string
	identity *service
	box      *service
	gateway  *service
	bare     *service

	identityEnv map[string]string
	identityDB  string
	boxDB       string
	dropDBs     func()

	users      []user
	staffToken string
	// readBody and readType are identity's answer to the authenticated
	// read, which the bare baseline server returns verbatim.
	readBody []byte
	readType string
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// databases returns identity's and box's DATABASE_URL: SQLite files under
// dir, or fresh PostgreSQL databases created from adminURL (dropped by
// the returned function).
func databases(ctx context.Context, engine, dir, adminURL string) (identityDB, boxDB string, drop func(), err error) {
	if engine == "sqlite" {
		return "sqlite:" + filepath.Join(dir, "identity.db"), "sqlite:" + filepath.Join(dir, "box.db"), func() {}, nil
	}
	admin, err := sqldb.Open(ctx, adminURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("--pg-url: %w", err)
	}
	suffix := randomSuffix()
	names := []string{"bench_" + suffix + "_identity", "bench_" + suffix + "_box"}
	drop = func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range names {
			if _, err := admin.Exec(c, `DROP DATABASE IF EXISTS `+n+` WITH (FORCE)`); err != nil {
				fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", n, err)
			}
		}
		admin.Close()
	}
	for _, n := range names {
		if _, err := admin.Exec(ctx, `CREATE DATABASE `+n); err != nil {
			drop()
			return "", "", nil, fmt.Errorf("create database %s: %w", n, err)
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		drop()
		return "", "", nil, err
	}
	with := func(name string) string {
		v := *u
		v.Path = "/" + name
		return v.String()
	}
	return with(names[0]), with(names[1]), drop, nil
}

// startPlatform migrates fresh databases and starts identity, box and the
// gateway.
func startPlatform(ctx context.Context, cfg config, bin, dir string) (*platform, error) {
	p := &platform{bin: bin, dir: dir, engine: cfg.engine}
	var err error
	p.identityDB, p.boxDB, p.dropDBs, err = databases(ctx, cfg.engine, dir, cfg.pgURL)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			p.stop()
			return nil, err
		}
	}
	identityURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	boxURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	p.identityEnv = map[string]string{
		"PORT":                strconv.Itoa(ports[0]),
		"DATABASE_URL":        p.identityDB,
		"IDENTITY_MASTER_KEY": masterKey(),
		"IDENTITY_ISSUER":     identityURL,
	}
	boxEnv := map[string]string{"PORT": strconv.Itoa(ports[1]), "DATABASE_URL": p.boxDB, "BOX_IDENTITY_URL": identityURL, "BOX_MASTER_KEY": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="}
	gatewayEnv := map[string]string{
		"PORT":            strconv.Itoa(ports[2]),
		"IDENTITY_URL":    identityURL,
		"IDENTITY_ISSUER": identityURL,
		"BOX_URL":         boxURL,
		// Every bench client is one caller; the limiter still runs on
		// every request, only its ceiling is out of the way.
		"GATEWAY_RATE_LIMIT": "1000000000",
	}
	for k, v := range cfg.serviceEnv {
		p.identityEnv[k], boxEnv[k], gatewayEnv[k] = v, v, v
	}
	if cfg.pprofBase > 0 {
		for i, env := range []map[string]string{p.identityEnv, boxEnv, gatewayEnv} {
			env["DEBUG_ADDR"] = "127.0.0.1:" + strconv.Itoa(cfg.pprofBase+i)
		}
		fmt.Fprintf(os.Stderr, "bench: profiling endpoints: identity 127.0.0.1:%d, box :%d, gateway :%d\n", cfg.pprofBase, cfg.pprofBase+1, cfg.pprofBase+2)
	}
	if err := runOnce(ctx, bin, p.identityEnv, "identity", "migrate"); err != nil {
		p.stop()
		return nil, err
	}
	if err := runOnce(ctx, bin, boxEnv, "box", "migrate"); err != nil {
		p.stop()
		return nil, err
	}
	if p.identity, err = startService(ctx, "identity", ports[0], filepath.Join(dir, "identity.log"), bin, p.identityEnv, "identity", "serve"); err != nil {
		p.stop()
		return nil, err
	}
	if p.box, err = startService(ctx, "box", ports[1], filepath.Join(dir, "box.log"), bin, boxEnv, "box", "serve"); err != nil {
		p.stop()
		return nil, err
	}
	if p.gateway, err = startService(ctx, "gateway", ports[2], filepath.Join(dir, "gateway.log"), bin, gatewayEnv, "gateway", "serve"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// services are the platform's processes whose memory the report shows.
func (p *platform) services() []*service {
	return []*service{p.identity, p.box, p.gateway}
}

func (p *platform) stop() {
	for _, s := range []*service{p.gateway, p.box, p.identity, p.bare} {
		s.stop()
	}
	if p.dropDBs != nil {
		p.dropDBs()
	}
}

// prepare registers the customers and an operator, gives each customer a
// team account with an active platform entitlement, and captures the
// authenticated read's answer for the bare baseline.
func (p *platform) prepare(ctx context.Context, c *http.Client) error {
	id := p.identity.URL
	register := func(email string) (string, error) {
		status, _, raw, err := callJSON(ctx, c, "POST", id+"/v1/users", "", map[string]any{"email": email, "password": benchPassword})
		if err != nil || status != http.StatusCreated {
			return "", fmt.Errorf("register %s: %d %s %v", email, status, raw, err)
		}
		status, body, raw, err := callJSON(ctx, c, "POST", id+"/v1/session", "", map[string]any{"email": email, "password": benchPassword})
		token, _ := body["token"].(string)
		if err != nil || status != http.StatusCreated || token == "" {
			return "", fmt.Errorf("login %s: %d %s %v", email, status, raw, err)
		}
		return token, nil
	}
	const operator = "operator@bench.example.com"
	if _, err := register(operator); err != nil {
		return err
	}
	if err := runOnce(ctx, p.bin, p.identityEnv, "identity", "staff", "add", operator); err != nil {
		return err
	}
	status, body, raw, err := callJSON(ctx, c, "POST", id+"/v1/session", "", map[string]any{"email": operator, "password": benchPassword})
	p.staffToken, _ = body["token"].(string)
	if err != nil || status != http.StatusCreated || p.staffToken == "" {
		return fmt.Errorf("operator login: %d %s %v", status, raw, err)
	}
	for i := range benchUsers {
		u := user{Email: fmt.Sprintf("customer%02d@bench.example.com", i)}
		if u.Token, err = register(u.Email); err != nil {
			return err
		}
		status, me, raw, err := callJSON(ctx, c, "GET", id+"/v1/me", u.Token, nil)
		u.ID, _ = me["id"].(string)
		if err != nil || status != http.StatusOK || u.ID == "" {
			return fmt.Errorf("me: %d %s %v", status, raw, err)
		}
		status, acct, raw, err := callJSON(ctx, c, "POST", id+"/v1/accounts", u.Token, map[string]any{"name": fmt.Sprintf("Bench Team %02d", i)})
		u.AccountID, _ = acct["id"].(string)
		if err != nil || status != http.StatusCreated || u.AccountID == "" {
			return fmt.Errorf("create account: %d %s %v", status, raw, err)
		}
		status, _, raw, err = callJSON(ctx, c, "POST", p.box.URL+"/v1/operator/entitlements", p.staffToken, map[string]any{
			"account_id": u.AccountID, "product": "platform", "version_range": "^1.0.0",
			"source": "reconciled_payment", "reference": fmt.Sprintf("pi_bench_%02d", i),
		})
		if err != nil || status != http.StatusCreated {
			return fmt.Errorf("grant: %d %s %v", status, raw, err)
		}
		p.users = append(p.users, u)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", id+"/v1/accounts/"+p.users[0].AccountID, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.users[0].Token)
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err = io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return errors.New("authenticated read during setup: " + res.Status)
	}
	p.readBody, p.readType = raw, res.Header.Get("Content-Type")
	return nil
}
