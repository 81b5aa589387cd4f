package billingcmd_test

import (
	"context"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/billing/billingcmd"
	"github.com/platformco/platform/internal/config"
)

// TestConfigRefusalsNameTheVariable: each bad value stops billing with a
// line naming its variable, and never repeats a secret.
func TestConfigRefusalsNameTheVariable(t *testing.T) {
	secret := strings.Repeat("s", 40)
	base := map[string]string{"BILLING_ENV": "development", "BILLING_PROCESSOR": "test"}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"valid", map[string]string{"BILLING_SERVICE_TOKENS": "muse:" + secret, "BILLING_COURIER_URL": "http://127.0.0.1:8083",
			"BILLING_COURIER_TOKEN": "billing:" + secret}, ""},
		{"no processor", map[string]string{"BILLING_PROCESSOR": ""}, "BILLING_PROCESSOR"},
		{"test in production", map[string]string{"BILLING_ENV": "production"}, "BILLING_PROCESSOR"},
		{"stripe without a key", map[string]string{"BILLING_PROCESSOR": "stripe"}, "BILLING_STRIPE_SECRET_KEY"},
		{"short service secret", map[string]string{"BILLING_SERVICE_TOKENS": "muse:short"}, "BILLING_SERVICE_TOKENS"},
		{"service token without a name", map[string]string{"BILLING_SERVICE_TOKENS": secret}, "BILLING_SERVICE_TOKENS"},
		{"courier without a token", map[string]string{"BILLING_COURIER_URL": "http://127.0.0.1:8083"}, "BILLING_COURIER_TOKEN"},
		{"courier URL not a URL", map[string]string{"BILLING_COURIER_URL": "courier", "BILLING_COURIER_TOKEN": "billing:" + secret}, "BILLING_COURIER_URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tt.env {
				env[k] = v
			}
			var cfg billingcmd.Config
			err := config.Load(context.Background(), func(k string) string { return env[k] }, &cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Load = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Load = %v, want an error naming %s", err, tt.want)
			case err != nil && strings.Contains(err.Error(), secret):
				t.Errorf("the error repeats a secret: %v", err)
			}
		})
	}
}
