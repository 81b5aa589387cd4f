package keyholdercmd_test

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/observe/observetest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

// An exchange, a refused exchange and a pull through keyholder's handler
// count by outcome, and the pull's bytes in the bytes streamed.
func TestKeyholderDomainMetricsThroughTheHandler(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		metricsAddr := observetest.FreeAddr(t)
		p := keyholdertest.Start(t, engine, keyholdertest.Options{Env: map[string]string{"METRICS_ADDR": metricsAddr}})
		const layer = 64 << 10
		p.PushImage("platform", "1.2.0", layer, 2)
		c := p.NewCustomer("ann@example.com")
		p.Grant(c, "platform", "^1.0.0")
		capability := p.Capability(c, "platform", "^1.0.0")
		cred := p.Exchange(capability)
		if st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": capability}, nil); st != 410 {
			t.Fatalf("a second exchange of one capability: %d %s, want 410", st, raw)
		}
		img, err := crane.Pull(p.KeyholderURL[len("http://"):]+"/platform:1.2.0", crane.Insecure,
			crane.WithAuth(&authn.Basic{Username: cred.Username, Password: cred.Password}))
		if err != nil {
			t.Fatalf("pull: %v", err)
		}
		layers, _ := img.Layers()
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, rc)
			rc.Close()
		}

		// The front counts a response's bytes when its handler returns,
		// which may be just after the client has read the last of them.
		testutil.Eventually(t, 5*time.Second, "the layers' bytes counted", func() bool {
			fam := observetest.ScrapeAddr(t, metricsAddr)["platform_keyholder_bytes_streamed_total"]
			return fam != nil && observetest.Value(fam, nil) >= 2*layer
		})
		fams := observetest.ScrapeAddr(t, metricsAddr)
		observetest.Want(t, fams, "platform_keyholder_exchanges_total", map[string]string{"outcome": "ok"}, 1)
		observetest.Want(t, fams, "platform_keyholder_exchanges_total", map[string]string{"outcome": "capability_used"}, 1)
		observetest.Want(t, fams, "platform_keyholder_pulls_total", map[string]string{"outcome": "ok"}, 1)
	})
}
