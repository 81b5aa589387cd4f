package devcmd

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/platformco/platform/internal/billing/billingcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
)

// billingPort is billing's in `platform dev` (operations.md §9), with the
// test processor: its hosted checkout page is billing's own.
const billingPort = 8087

// billingConfig migrates billing's database, seeds the four plans on the
// first start (seeding finds them after that) and returns its
// configuration: the test processor in development, identity and the
// web app behind the gateway to return to.
func billingConfig(ctx context.Context, env cli.Env, dir, natsURL, dial, named, metricsAddr string) (billingcmd.Config, error) {
	var cfg billingcmd.Config
	db := "sqlite:" + filepath.Join(dir, "billing.db")
	if _, err := billingcmd.Command.Migrate(ctx, db); err != nil {
		return cfg, fmt.Errorf("billing migrations: %w", err)
	}
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":                 fmt.Sprint(billingPort),
		"DATABASE_URL":         db,
		"BILLING_ENV":          "development",
		"BILLING_PROCESSOR":    billingcmd.ProcessorTest,
		"BILLING_IDENTITY_URL": fmt.Sprintf("http://%s:%d", dial, identityPort),
		"BILLING_BOX_URL":      fmt.Sprintf("http://%s:%d", dial, boxPort),
		"BILLING_PUBLIC_URL":   fmt.Sprintf("http://%s:%d", named, gatewayPort),
		"EVENTS_URL":           natsURL,
		"METRICS_ADDR":         metricsAddr,
	}), &cfg); err != nil {
		return cfg, err
	}
	if _, err := billingcmd.Seed(ctx, cfg, env.Logger("billing")); err != nil {
		return cfg, fmt.Errorf("billing plans seed: %w", err)
	}
	return cfg, nil
}
