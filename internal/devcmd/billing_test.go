package devcmd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/cli"
	courierhttp "github.com/platformco/platform/internal/courier/httpapi"
)

// TestBillingSendsReceiptsToThisCourier: in the quick start billing's
// courier credential is one courier accepts, both derived from courier's
// key, and billing runs the test processor with the four plans.
func TestBillingSendsReceiptsToThisCourier(t *testing.T) {
	dir := t.TempDir()
	env := cli.Env{Getenv: func(string) string { return "" }}
	bCfg, err := billingConfig(context.Background(), env, dir, "", "127.0.0.1", "localhost", "")
	if err != nil {
		t.Fatalf("billingConfig: %v", err)
	}
	cCfg, err := courierConfig(context.Background(), env, dir, "", "")
	if err != nil {
		t.Fatalf("courierConfig: %v", err)
	}
	tokens, err := courierhttp.ParseServiceTokens(cCfg.ServiceTokens)
	if err != nil {
		t.Fatal(err)
	}
	name, secret, _ := strings.Cut(bCfg.CourierToken, ":")
	if want, ok := tokens[name]; !ok || want != sha256.Sum256([]byte(secret)) || name != "billing" {
		t.Errorf("billing's courier token %q is not one courier accepts", name)
	}
	if !strings.HasSuffix(bCfg.CourierURL, fmt.Sprintf(":%d", courierPort)) || bCfg.Processor != "test" {
		t.Errorf("billing config = courier %s, processor %s", bCfg.CourierURL, bCfg.Processor)
	}
}
