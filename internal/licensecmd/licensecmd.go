// Package licensecmd is `platform license`: checking a licence file from a
// shell as the customer's software does with the public license package.
package licensecmd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/license"
)

// Run runs `platform license verify FILE --keys URL_OR_FILE
// [--fingerprint F] [--version V]`.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 || args[0] != "verify" {
		return cli.Usagef("license: expected verify")
	}
	return verify(ctx, args[1:], env)
}

func verify(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("license verify", env.Stderr)
	keys := fs.String("keys", "", "the key set: box's /v1/license/keys URL, or a file holding it")
	fingerprint := fs.String("fingerprint", "", "the installation's fingerprint, checked when given")
	version := fs.String("version", "", "the running version X.Y.Z, checked against the licence's range when given")
	// FILE may come before the flags, as the usage line shows it.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return cli.Usagef("license verify: unexpected argument %q", fs.Arg(0))
	}
	if file == "" || *keys == "" {
		return cli.Usagef("license verify: want FILE and --keys URL_OR_FILE")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("license verify: %w", err)
	}
	raw, err := readKeys(ctx, *keys)
	if err != nil {
		return fmt.Errorf("license verify: %w", err)
	}
	set, err := license.ParseKeySet(raw)
	if err != nil {
		return fmt.Errorf("license verify: %w", err)
	}
	c, err := license.Verify(data, set, license.Options{Fingerprint: *fingerprint, Version: *version})
	if err != nil {
		return fmt.Errorf("license verify: %s: %w", file, err)
	}
	rng := "every version"
	if c.VersionRange != nil {
		rng = *c.VersionRange
	}
	fmt.Fprintf(env.Stdout, "valid: %s %s for %s (%s), installation %s, fingerprint %q, until %s\n",
		c.Product, rng, c.AccountName, c.AccountID, c.Subject, c.Fingerprint, time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	return nil
}

// readKeys fetches an http(s) URL or reads a file.
func readKeys(ctx context.Context, src string) ([]byte, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		return os.ReadFile(src)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the key set: %s answered %d", src, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}
