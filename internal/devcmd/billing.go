package devcmd

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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
	courierKey, err := loadOrCreateMasterKey(filepath.Join(dir, courierKeyFile))
	if err != nil {
		return cfg, err
	}
	db := "sqlite:" + filepath.Join(dir, "billing.db")
	if _, err := billingcmd.Command.Migrate(ctx, db); err != nil {
		return cfg, fmt.Errorf("billing migrations: %w", err)
	}
	if err := config.Load(ctx, only(env, map[string]string{
		"PORT":                  fmt.Sprint(billingPort),
		"DATABASE_URL":          db,
		"BILLING_ENV":           "development",
		"BILLING_PROCESSOR":     billingcmd.ProcessorTest,
		"BILLING_IDENTITY_URL":  fmt.Sprintf("http://%s:%d", dial, identityPort),
		"BILLING_BOX_URL":       fmt.Sprintf("http://%s:%d", dial, boxPort),
		"BILLING_PUBLIC_URL":    fmt.Sprintf("http://%s:%d", named, gatewayPort),
		"BILLING_COURIER_URL":   fmt.Sprintf("http://%s:%d", dial, courierPort),
		"BILLING_COURIER_TOKEN": "billing:" + billingCourierSecret(courierKey),
		"EVENTS_URL":            natsURL,
		"METRICS_ADDR":          metricsAddr,
	}), &cfg); err != nil {
		return cfg, err
	}
	if _, err := billingcmd.Seed(ctx, cfg, env.Logger("billing")); err != nil {
		return cfg, fmt.Errorf("billing plans seed: %w", err)
	}
	return cfg, nil
}

// billingCourierSecret is the secret of billing's courier credential in
// the quick start (one of COURIER_SERVICE_TOKENS), derived from courier's
// key as identity's is, so nothing more is stored.
func billingCourierSecret(courierKey string) string {
	sum := sha256.Sum256([]byte("platform dev: billing's courier credential\x00" + courierKey))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
