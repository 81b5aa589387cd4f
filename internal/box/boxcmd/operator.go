package boxcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
)

// operatorClient calls box's operator API with a staff token.
type operatorClient struct {
	base  string
	token string
	http  *http.Client
}

// operatorConfig is what the operator commands read.
type operatorConfig struct {
	BoxURL string `env:"BOX_URL, default=http://localhost:8082" rule:"url"`
	// Token is a staff member's bearer token from POST /v1/session.
	Token string `env:"PLATFORM_TOKEN, required"`
}

// newOperatorClient reads BOX_URL and PLATFORM_TOKEN.
func newOperatorClient(ctx context.Context, getenv func(string) string) (*operatorClient, error) {
	var cfg operatorConfig
	if err := config.Load(ctx, getenv, &cfg); err != nil {
		return nil, err
	}
	return &operatorClient{base: strings.TrimRight(cfg.BoxURL, "/"), token: cfg.Token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiError is box's error envelope, as a command error.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("box answered %d", e.Status)
	}
	return fmt.Sprintf("box answered %d %s: %s", e.Status, e.Code, e.Message)
}

// do sends a request and returns the status and body of a 2xx or 409
// answer; any other status is an *apiError.
func (c *operatorClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("call box at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read box's answer: %w", err)
	}
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusConflict {
		return resp.StatusCode, data, nil
	}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	return 0, nil, &apiError{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
}

// row is an entitlement as the operator API serializes it; the commands
// print it as they received it.
type rowEnvelope struct {
	Entitlement json.RawMessage `json:"entitlement"`
}

func printRow(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("box answered an unreadable row: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func runGrant(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("box grant", env.Stderr)
	account := fs.String("account", "", "the buyer's team account id (UUID)")
	product := fs.String("product", "", "kit, platform, identity or courier")
	versionRange := fs.String("range", "", "version range (^X.Y.Z, ~X.Y.Z, >=X.Y.Z, X.Y.Z); empty means every version")
	source := fs.String("source", "", "where the grant comes from, e.g. reconciled_payment")
	reference := fs.String("reference", "", "the payment processor's payment identifier")
	maxInstallations := fs.Int("max-installations", 0, "how many installations may count at once; 0 means unlimited")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("box grant: unexpected argument %q", fs.Arg(0))
	}
	if strings.TrimSpace(*account) == "" {
		return cli.Usagef("box grant: --account is required")
	}
	if *maxInstallations < 0 {
		return cli.Usagef("box grant: --max-installations must be 0 (unlimited) or more")
	}
	// The API defaults a missing product to the free kit; a paid grant that
	// forgot --product would grant the wrong thing, so the command insists.
	if strings.TrimSpace(*product) == "" {
		return cli.Usagef("box grant: --product is required (kit, platform, identity or courier)")
	}
	c, err := newOperatorClient(ctx, env.Getenv)
	if err != nil {
		return err
	}
	body := map[string]any{"account_id": *account, "product": *product}
	if *maxInstallations > 0 {
		body["max_installations"] = *maxInstallations
	}
	for k, v := range map[string]string{"version_range": *versionRange, "source": *source, "reference": *reference} {
		if v != "" {
			body[k] = v
		}
	}
	status, data, err := c.do(ctx, http.MethodPost, "/v1/operator/entitlements", body)
	if err != nil {
		return err
	}
	var out struct {
		Entitlement json.RawMessage `json:"entitlement"`
		Duplicate   bool            `json:"duplicate"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Entitlement == nil {
		return fmt.Errorf("box answered %d with an unreadable body", status)
	}
	if err := printRow(env.Stdout, out.Entitlement); err != nil {
		return err
	}
	if status == http.StatusConflict {
		var existing struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(out.Entitlement, &existing)
		return fmt.Errorf("box grant: nothing granted: account %s already holds an active %s entitlement (id %d, printed above); to record this payment instead, revoke it and grant again",
			*account, *product, existing.ID)
	}
	return nil
}

func runRevoke(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("box revoke", env.Stderr)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("box revoke: want exactly one entitlement id")
	}
	c, err := newOperatorClient(ctx, env.Getenv)
	if err != nil {
		return err
	}
	_, data, err := c.do(ctx, http.MethodPost, "/v1/operator/entitlements/"+url.PathEscape(fs.Arg(0))+"/revoke", nil)
	if err != nil {
		return err
	}
	var out rowEnvelope
	if err := json.Unmarshal(data, &out); err != nil || out.Entitlement == nil {
		return fmt.Errorf("box answered an unreadable body")
	}
	return printRow(env.Stdout, out.Entitlement)
}

// runList prints every matching row, one JSON object per line, newest
// first, following the cursor through all pages.
func runList(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("box list", env.Stderr)
	account := fs.String("account", "", "only this account id")
	product := fs.String("product", "", "only this product")
	status := fs.String("status", "", "only active or revoked rows")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("box list: unexpected argument %q", fs.Arg(0))
	}
	c, err := newOperatorClient(ctx, env.Getenv)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"account_id": *account, "product": *product, "status": *status} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("limit", "200")
	for {
		_, data, err := c.do(ctx, http.MethodGet, "/v1/operator/entitlements?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		var page struct {
			Entitlements []json.RawMessage `json:"entitlements"`
			NextCursor   *string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return fmt.Errorf("box answered an unreadable page: %w", err)
		}
		for _, row := range page.Entitlements {
			var buf bytes.Buffer
			if err := json.Compact(&buf, row); err != nil {
				return fmt.Errorf("box answered an unreadable row: %w", err)
			}
			buf.WriteByte('\n')
			if _, err := env.Stdout.Write(buf.Bytes()); err != nil {
				return err
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return nil
		}
		q.Set("cursor", *page.NextCursor)
	}
}
