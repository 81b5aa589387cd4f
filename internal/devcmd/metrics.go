package devcmd

import (
	"fmt"
	"net"
	"strconv"

	"github.com/platformco/platform/internal/cli"
)

// metricsOrder is the order of the services' metrics listeners from
// METRICS_ADDR's port: one process serves ten registries, one each.
var metricsOrder = []string{"identity", "box", "gateway", "courier", "keyholder", "parlor", "billing", "darkroom", "pantry", "muse"}

// metricsAddrs gives each embedded service its METRICS_ADDR: the shell's
// METRICS_ADDR for identity and the next ports for the others, in
// metricsOrder. Unset, no service serves metrics.
func metricsAddrs(env cli.Env) (map[string]string, error) {
	addrs := map[string]string{}
	v := env.Getenv("METRICS_ADDR")
	if v == "" {
		return addrs, nil
	}
	host, p, err := net.SplitHostPort(v)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 0 || port+len(metricsOrder)-1 > 65535 {
		return nil, fmt.Errorf("METRICS_ADDR: must be host:port with room for %d ports (platform dev serves each service's metrics on the next), got %q", len(metricsOrder), v)
	}
	for i, svc := range metricsOrder {
		n := port
		if port != 0 {
			n = port + i
		}
		addrs[svc] = net.JoinHostPort(host, strconv.Itoa(n))
	}
	return addrs, nil
}
