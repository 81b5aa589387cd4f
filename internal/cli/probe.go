package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// probeTimeout bounds one probe; container health checks run it every few
// seconds.
const probeTimeout = 3 * time.Second

// Probe runs `platform probe URL`: it GETs URL (a service's /readyz or
// /healthz on loopback) and succeeds on a 2xx answer. It is the container
// health check of an image with no shell, curl or wget (distroless).
func Probe(ctx context.Context, args []string, env Env) error {
	if len(args) != 1 {
		return Usagef("probe: expected one URL, such as http://127.0.0.1:8080/readyz")
	}
	u, err := url.Parse(args[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Usagef("probe: %q is not an http(s) URL", args[0])
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe: %s answered %d", u.Redacted(), resp.StatusCode)
	}
	fmt.Fprintf(env.Stdout, "%s answered %d\n", u.Redacted(), resp.StatusCode)
	return nil
}
